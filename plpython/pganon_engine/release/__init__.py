"""The top layer: the publish pipeline (`pipeline`), the family registry and interface
(`families`), promote and the release lifecycle (`lifecycle`), whose rights a call runs with
(`roles`), and the entry points `pganon._engine` dispatches to (`entries`)."""
