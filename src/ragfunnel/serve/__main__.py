"""`python -m ragfunnel.serve [--host ... --port ... --index ... --llm ...]`: same as `ragfunnel serve`."""

from ragfunnel.serve.cli import main

main()
