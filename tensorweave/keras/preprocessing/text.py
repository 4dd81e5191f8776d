"""tf.keras.preprocessing.text: Tokenizer (a vocabulary fitted on texts, and texts as index
sequences or matrices), text_to_word_sequence, one_hot and hashing_trick (keras_preprocessing's
text module)."""
from __future__ import annotations

import collections
import hashlib
import json

import numpy as np

from tensorweave.framework.tf_export import tf_export

_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def _check_text(text, what: str = "text"):
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}: {text!r}")
    return text


@tf_export("keras.preprocessing.text.text_to_word_sequence")
def text_to_word_sequence(text, filters=_FILTERS, lower=True, split=" "):
    """The words of `text`: lowercased (`lower`), each character of `filters` replaced by `split`,
    split on `split`, empty words dropped."""
    text = _check_text(text)
    if lower:
        text = text.lower()
    text = text.translate(str.maketrans({c: split for c in filters}))
    return [word for word in text.split(split) if word]


@tf_export("keras.preprocessing.text.one_hot")
def one_hot(text, n, filters=_FILTERS, lower=True, split=" ", analyzer=None):
    """hashing_trick with Python's hash: each word of `text` as an index in 1..n-1 (not stable
    between processes for strings unless PYTHONHASHSEED is set, as in Keras)."""
    return hashing_trick(text, n, hash_function=hash, filters=filters, lower=lower, split=split, analyzer=analyzer)


def _md5(word: str) -> int:
    return int(hashlib.md5(word.encode()).hexdigest(), 16)


@tf_export("keras.preprocessing.text.hashing_trick")
def hashing_trick(text, n, hash_function=None, filters=_FILTERS, lower=True, split=" ", analyzer=None):
    """Each word of `text` as hash_function(word) % (n - 1) + 1; hash_function None is Python's
    hash, "md5" the md5 digest as an integer (stable across runs)."""
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        hash_function = _md5
    words = text_to_word_sequence(text, filters=filters, lower=lower, split=split) if analyzer is None \
        else analyzer(text)
    return [hash_function(w) % (n - 1) + 1 for w in words]


@tf_export("keras.preprocessing.text.Tokenizer")
class Tokenizer:
    """A vocabulary fitted on texts: words ranked by count (`word_index`, 1 the most frequent; the
    `oov_token`, when given, is 1), texts turned into sequences of those indices or into matrices.
    Only the `num_words - 1` most frequent words are kept by texts_to_sequences and the matrices.

    Args:
      num_words: the vocabulary size kept (None: all).
      filters: characters removed from texts. lower: lowercase texts. split: the word separator.
      char_level: every character is a token.
      oov_token: a token that stands for words outside the vocabulary in texts_to_sequences.
      analyzer: a function from text to tokens, instead of the filters and split.
    """

    def __init__(self, num_words=None, filters=_FILTERS, lower=True, split=" ", char_level=False, oov_token=None,
                 analyzer=None, **kwargs):
        if "nb_words" in kwargs:
            num_words = kwargs.pop("nb_words")
        document_count = kwargs.pop("document_count", 0)
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
        self.word_counts = collections.OrderedDict()
        self.word_docs = collections.defaultdict(int)
        self.filters = filters
        self.split = split
        self.lower = lower
        self.num_words = num_words
        self.document_count = document_count
        self.char_level = char_level
        self.oov_token = oov_token
        self.index_docs = collections.defaultdict(int)
        self.word_index = {}
        self.index_word = {}
        self.analyzer = analyzer

    def _tokens(self, text, position):
        """The tokens of one text (a str, or a list of tokens)."""
        if isinstance(text, list):
            for token in text:
                _check_text(token, f"token of text {position}")
            return [t.lower() for t in text] if self.lower else text
        _check_text(text, f"text {position}")
        if self.char_level:
            return text.lower() if self.lower else text
        if self.analyzer is not None:
            return self.analyzer(text)
        return text_to_word_sequence(text, filters=self.filters, lower=self.lower, split=self.split)

    def fit_on_texts(self, texts):
        """Updates the vocabulary from `texts` (strings, or lists of tokens)."""
        if isinstance(texts, str):
            raise TypeError("fit_on_texts takes a list of texts, not one str")
        for position, text in enumerate(texts):
            self.document_count += 1
            seq = self._tokens(text, position)
            for w in seq:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(seq):
                self.word_docs[w] += 1
        wcounts = sorted(self.word_counts.items(), key=lambda x: x[1], reverse=True)   # ties keep first-seen order
        sorted_voc = ([] if self.oov_token is None else [self.oov_token]) + [w for w, _ in wcounts]
        self.word_index = dict(zip(sorted_voc, range(1, len(sorted_voc) + 1)))
        self.index_word = {c: w for w, c in self.word_index.items()}
        for w, c in list(self.word_docs.items()):
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences):
        """Updates the document counts (for tfidf) from sequences of indices."""
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[i] += 1

    def texts_to_sequences(self, texts):
        """Each text as the list of its words' indices (words outside the vocabulary, or ranked
        num_words or beyond, dropped or given the oov_token's index)."""
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts):
        if isinstance(texts, str):
            raise TypeError("texts_to_sequences takes a list of texts, not one str")
        num_words = self.num_words
        oov_token_index = self.word_index.get(self.oov_token)
        for position, text in enumerate(texts):
            vect = []
            for w in self._tokens(text, position):
                i = self.word_index.get(w)
                if i is not None and not (num_words and i >= num_words):
                    vect.append(i)
                elif oov_token_index is not None:
                    vect.append(oov_token_index)
            yield vect

    def sequences_to_texts(self, sequences):
        """Each sequence of indices back as a text of its words joined by spaces."""
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences):
        num_words = self.num_words
        oov_token_index = self.word_index.get(self.oov_token)
        for seq in sequences:
            vect = []
            for num in seq:
                word = self.index_word.get(num)
                if word is not None and not (num_words and num >= num_words):
                    vect.append(word)
                elif oov_token_index is not None:
                    vect.append(self.index_word[oov_token_index])
            yield " ".join(vect)

    def texts_to_matrix(self, texts, mode="binary"):
        """texts_to_sequences as a matrix (see sequences_to_matrix)."""
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode="binary"):
        """A (len(sequences), num_words) float matrix: per index, "binary" presence, "count",
        "freq" (count / length) or "tfidf" ((1 + log count) * log(1 + docs / (1 + docs with it)))."""
        if mode not in ("binary", "count", "freq", "tfidf"):
            raise ValueError(f"Unknown vectorization mode: {mode!r} (binary, count, freq or tfidf)")
        if not self.num_words:
            if not self.word_index:
                raise ValueError("Specify a dimension (`num_words` argument), or fit on some text data first.")
            num_words = len(self.word_index) + 1
        else:
            num_words = self.num_words
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        x = np.zeros((len(sequences), num_words))
        for i, seq in enumerate(sequences):
            if not seq:
                continue
            counts = collections.Counter(j for j in seq if j < num_words)
            for j, c in counts.items():
                if mode == "count":
                    x[i][j] = c
                elif mode == "freq":
                    x[i][j] = c / len(seq)
                elif mode == "binary":
                    x[i][j] = 1
                else:
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
                    x[i][j] = (1 + np.log(c)) * idf
        return x

    def get_config(self):
        """The configuration and vocabulary, the dicts as JSON strings (as Keras writes them)."""
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower, "split": self.split,
                "char_level": self.char_level, "oov_token": self.oov_token, "document_count": self.document_count,
                "word_counts": json.dumps(self.word_counts), "word_docs": json.dumps(self.word_docs),
                "index_docs": json.dumps(self.index_docs), "index_word": json.dumps(self.index_word),
                "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs):
        """The tokenizer as JSON, which tokenizer_from_json reads (`kwargs` go to json.dumps)."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()}, **kwargs)


@tf_export("keras.preprocessing.text.tokenizer_from_json")
def tokenizer_from_json(json_string):
    """The Tokenizer a Tokenizer.to_json string describes."""
    config = dict(json.loads(json_string).get("config") or {})
    try:
        word_counts = json.loads(config.pop("word_counts"))
        word_docs = json.loads(config.pop("word_docs"))
        index_docs = {int(k): v for k, v in json.loads(config.pop("index_docs")).items()}
        index_word = {int(k): v for k, v in json.loads(config.pop("index_word")).items()}
        word_index = json.loads(config.pop("word_index"))
    except KeyError as e:
        raise ValueError(f"tokenizer_from_json: the config lacks {e.args[0]!r}; not a Tokenizer.to_json string") from e
    tokenizer = Tokenizer(**config)
    tokenizer.word_counts = word_counts
    tokenizer.word_docs = word_docs
    tokenizer.index_docs = index_docs
    tokenizer.word_index = word_index
    tokenizer.index_word = index_word
    return tokenizer
