"""First-stage retrieval: sparse (BM25) and dense retrievers, parent collapse, and fusion."""
