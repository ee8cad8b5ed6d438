"""A small text classifier for routing questions: multinomial logistic regression over word 1-2-grams and character
3-5-grams, in numpy (search needs only the core install). It trains in well under a second on a few hundred
labelled questions, so the router trains it from its example file on first use instead of shipping weights.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

_WORD = re.compile(r"[a-z0-9']+")


def features(text: str) -> list[str]:
    """Word unigrams and bigrams (with start/end marks) and character 3-5-grams of the lower-cased question."""
    low = " ".join(text.lower().replace("’", "'").split())
    words = ["<s>", *_WORD.findall(low), "</s>"]
    out = [f"w:{w}" for w in words[1:-1]]
    out += [f"b:{a} {b}" for a, b in zip(words, words[1:])]
    padded = f" {' '.join(words[1:-1])} "
    for n in (3, 4, 5):
        out += [f"c:{padded[i:i + n]}" for i in range(len(padded) - n + 1)]
    return out


class TextClassifier:
    """Softmax regression with L2; `fit` is deterministic (full-batch gradient descent from zeros)."""

    def __init__(self, l2: float = 1e-4, epochs: int = 200, lr: float = 4.0, min_count: int = 2):
        self.l2, self.epochs, self.lr, self.min_count = l2, epochs, lr, min_count
        self.labels: list[str] = []
        self.vocab: dict[str, int] = {}
        self.w: np.ndarray | None = None
        self.b: np.ndarray | None = None

    def _matrix(self, texts: Sequence[str]) -> _Sparse:
        rows, cols, vals = [], [], []
        for i, text in enumerate(texts):
            counts = Counter(j for j in (self.vocab.get(f) for f in features(text)) if j is not None)
            norm = max(sum(c * c for c in counts.values()) ** 0.5, 1e-9)
            for j, c in counts.items():
                rows.append(i)
                cols.append(j)
                vals.append(c / norm)
        return _Sparse(np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64),
                       np.array(vals, dtype=np.float32), len(texts), len(self.vocab))

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> TextClassifier:
        self.labels = sorted(set(labels))
        counts = Counter(f for t in texts for f in set(features(t)))
        self.vocab = {f: i for i, f in enumerate(sorted(f for f, c in counts.items() if c >= self.min_count))}
        x = self._matrix(texts)
        y = np.zeros((len(texts), len(self.labels)), dtype=np.float32)
        y[np.arange(len(texts)), [self.labels.index(lab) for lab in labels]] = 1.0
        # class weights: each class counts as much as any other, however many examples it has
        weight = ((len(texts) / (len(self.labels) * y.sum(axis=0)))[None, :] * y).sum(axis=1, keepdims=True)
        w = np.zeros((x.cols, len(self.labels)), dtype=np.float32)
        b = np.zeros(len(self.labels), dtype=np.float32)
        n = float(len(texts))
        for _ in range(self.epochs):
            p = _softmax(x.dot(w) + b)
            g = (p - y) * weight / n
            w -= self.lr * (x.tdot(g) + self.l2 * w)
            b -= self.lr * g.sum(axis=0)
        self.w, self.b = w, b
        return self

    def save(self, path: Path) -> None:
        """Write the fitted model (labels, vocabulary, weights) to `path` (.npz), atomically."""
        assert self.w is not None and self.b is not None, "fit first"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(tmp, labels=np.array(self.labels), vocab=np.array(sorted(self.vocab, key=self.vocab.__getitem__)),
                 w=self.w, b=self.b)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> TextClassifier:
        with np.load(path, allow_pickle=False) as data:
            model = cls()
            model.labels = [str(x) for x in data["labels"]]
            model.vocab = {str(f): i for i, f in enumerate(data["vocab"])}
            model.w, model.b = data["w"], data["b"]
        return model

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        assert self.w is not None and self.b is not None, "fit first"
        return _softmax(self._matrix(texts).dot(self.w) + self.b)

    def scores(self, text: str) -> dict[str, float]:
        return {lab: float(p) for lab, p in zip(self.labels, self.predict_proba([text])[0])}


def read_examples(path: Path) -> tuple[list[str], list[str]]:
    """Labelled examples, one a line: label<TAB>text; blank lines and # comments skipped."""
    texts, labels = [], []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, _, text = line.partition("\t")
        texts.append(text.strip())
        labels.append(label.strip())
    return texts, labels


def fit_cached(examples: Path, cache_dir: Path | None, name: str,
               prepare: Callable[[str], str] | None = None) -> TextClassifier:
    """A `TextClassifier` fitted on `examples` (each text passed through `prepare` first), kept under
    `cache_dir/<name>-<hash>.npz` (a hash of the examples and the model's settings), so a new process loads it in
    milliseconds instead of fitting it again (~1-3 s on 2 busy cores)."""
    model = TextClassifier()
    key = hashlib.sha256(examples.read_bytes() + repr(vars(model)).encode()).hexdigest()[:16]
    cached = cache_dir / f"{name}-{key}.npz" if cache_dir is not None else None
    if cached is not None and cached.is_file():
        try:
            return TextClassifier.load(cached)
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache file: fit again and replace it
    texts, labels = read_examples(examples)
    model.fit([prepare(t) for t in texts] if prepare else texts, labels)
    if cached is not None:
        try:
            model.save(cached)
        except OSError:
            pass  # a read-only home: fit again next time
    return model


class _Sparse:
    """A sparse matrix as coordinate lists: X @ W and X.T @ G without scipy (segment sums with np.add.reduceat,
    far faster than np.add.at)."""

    def __init__(self, rows: np.ndarray, cols_: np.ndarray, vals: np.ndarray, n_rows: int, n_cols: int):
        self.rows, self.cols = n_rows, n_cols
        by_row = np.lexsort((cols_, rows))
        self.r, self.c, self.v = rows[by_row], cols_[by_row], vals[by_row]
        self.row_ids, self.row_starts = np.unique(self.r, return_index=True)
        by_col = np.argsort(self.c, kind="stable")
        self.cc, self.cr, self.cv = self.c[by_col], self.r[by_col], self.v[by_col]
        self.col_ids, self.col_starts = np.unique(self.cc, return_index=True)

    def dot(self, w: np.ndarray) -> np.ndarray:
        out = np.zeros((self.rows, w.shape[1]), dtype=np.float32)
        if len(self.r):
            out[self.row_ids] = np.add.reduceat(w[self.c] * self.v[:, None], self.row_starts, axis=0)
        return out

    def tdot(self, g: np.ndarray) -> np.ndarray:
        out = np.zeros((self.cols, g.shape[1]), dtype=np.float32)
        if len(self.cc):
            out[self.col_ids] = np.add.reduceat(g[self.cr] * self.cv[:, None], self.col_starts, axis=0)
        return out


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
