"""Person-aware releases, which count persons rather than records: DAnonyIR (`danonyir`), GeneIR
(`geneir`), 1:M-generalization under (k,l)-diversity (`one_m`), and the release family (`family`)."""
