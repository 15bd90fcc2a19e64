"""Many things English-Spanish (Tatoeba sentence pairs from manythings.org/anki), prepared and synthetic.

Published as ``spa-eng.zip``. manythings.org's current zip holds ``spa.txt`` with three tab-separated
columns (English, Spanish, attribution) and ``_about.txt``; the older snapshot that TensorFlow's
NMT tutorial hosts (and the study's notebooks download) holds ``spa-eng/spa.txt`` with two
columns. Both are read: the member named spa.txt, its first two columns. The upstream file grows
over time, so a sha256 pins one snapshot.

Prepared like the study: the first 100,000 pairs of the file, split 80,000 / 20,000 after a
deterministic shuffle. Text is lowercased (NFC) and split into words and single punctuation marks
(``¿dónde está?`` -> ``¿ dónde está ?``). Each language gets its own vocabulary from the training
pairs: 0 pad, 1 unk, 2 <start>, 3 <end>, then the most frequent words (ties alphabetical), 10,000
ids in all. Sentences are cut to 20 tokens (targets to 19, plus the marker). Arrays per split:

- ``src_*`` int32 (N, 20) English ids, post-padded; ``src_len_*`` int32 (N,)
- ``tgt_in_*`` int32 (N, 20): <start> + Spanish ids (decoder input, teacher forcing)
- ``tgt_out_*`` int32 (N, 20): Spanish ids + <end> (what the decoder predicts); ``tgt_len_*`` int32
- ``y_*`` = ``tgt_out_*`` (the bench loader keys splits and subsets on y)

Direction: English -> Spanish, as the paper says; the authors' notebooks (the TF tutorial code)
translate Spanish -> English. Recorded in meta.

Synthetic: a spa-eng.zip in manythings' current layout whose pairs come from a small grammar with a
word-by-word bilingual lexicon (real words plus made-up nouns), Spanish noun-adjective order,
gender agreement and verb endings: a seq2seq model can learn the mapping.
"""

from __future__ import annotations

import io
import re
import unicodedata
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from bench.atomic import write_bytes as write_bytes_atomic
from data.formats import RawFormatError
from data.npz import Arrays

MANYTHINGS_ARCHIVE = "spa-eng.zip"
MANYTHINGS_MEMBER = "spa.txt"
MANYTHINGS_PAIRS = 100_000  # the study uses the file's first 100,000 pairs
MANYTHINGS_MAXLEN = 20  # tokens per sentence, markers included
MANYTHINGS_VOCAB_SIZE = 10_000  # ids per language, the four specials included
MANYTHINGS_SHUFFLE_SEED = 20180101
PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3
SPECIALS = ["<pad>", "<unk>", "<start>", "<end>"]
TOKENIZER = ("NFC, lowercase, '_' -> space; tokens = runs of letters/digits joined by single inner "
             "apostrophes, or any other single non-space character (¿ ? ¡ ! , . ...)")
_TOKEN = re.compile(r"\w+(?:'\w+)*|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Lowercase word and punctuation tokens (see TOKENIZER)."""
    return _TOKEN.findall(unicodedata.normalize("NFC", text).lower().replace("_", " "))


def read_pairs(archive: Path, limit: int = MANYTHINGS_PAIRS) -> list[tuple[str, str]]:
    """The first ``limit`` (English, Spanish) pairs of the zip's spa.txt, in file order."""
    try:
        with zipfile.ZipFile(archive) as zf:
            members = [m for m in zf.namelist() if m.rsplit("/", 1)[-1] == MANYTHINGS_MEMBER]
            if len(members) != 1:
                raise RawFormatError(f"{archive.name} holds {len(members)} files named {MANYTHINGS_MEMBER}, not 1")
            data = zf.read(members[0])
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as err:
        raise RawFormatError(f"{archive.name} is not a readable zip file ({err or 'truncated'})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise RawFormatError(f"{MANYTHINGS_MEMBER} in {archive.name} is not UTF-8 (byte {err.start})") from None
    pairs = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise RawFormatError(f"{MANYTHINGS_MEMBER} line {number} has no tab between English and Spanish")
        pairs.append((fields[0], fields[1]))
        if len(pairs) == limit:
            break
    if len(pairs) < 5:
        raise RawFormatError(f"{MANYTHINGS_MEMBER} in {archive.name} has only {len(pairs)} pairs")
    return pairs


def build_vocab(sentences: list[list[str]], size: int = MANYTHINGS_VOCAB_SIZE) -> list[str]:
    """Specials, then the most frequent words of ``sentences`` (ties alphabetical): ``size`` ids at most."""
    counts = Counter(w for s in sentences for w in s)
    return SPECIALS + sorted(counts, key=lambda w: (-counts[w], w))[: size - len(SPECIALS)]


def _ids(tokens: list[str], lookup: dict[str, int]) -> list[int]:
    return [lookup.get(w, UNK_ID) for w in tokens]


def encode_source(sentences: list[list[int]], maxlen: int) -> tuple[np.ndarray, np.ndarray]:
    """Source ids -> (N, maxlen) int32 post-padded and lengths; an empty sentence is one <unk>."""
    x = np.full((len(sentences), maxlen), PAD_ID, dtype=np.int32)
    lengths = np.empty(len(sentences), dtype=np.int32)
    for row, ids in enumerate(sentences):
        kept = ids[:maxlen] or [UNK_ID]
        x[row, : len(kept)] = kept
        lengths[row] = len(kept)
    return x, lengths


def encode_target(sentences: list[list[int]], maxlen: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Target ids -> decoder input (<start> + ids), output (ids + <end>), both (N, maxlen), and lengths."""
    tgt_in = np.full((len(sentences), maxlen), PAD_ID, dtype=np.int32)
    tgt_out = np.full((len(sentences), maxlen), PAD_ID, dtype=np.int32)
    lengths = np.empty(len(sentences), dtype=np.int32)
    for row, ids in enumerate(sentences):
        kept = ids[: maxlen - 1]
        tgt_in[row, : len(kept) + 1] = [START_ID, *kept]
        tgt_out[row, : len(kept) + 1] = [*kept, END_ID]
        lengths[row] = len(kept) + 1
    return tgt_in, tgt_out, lengths


def prepare_manythings(raw: Path) -> tuple[Arrays, dict[str, Any]]:
    """spa-eng.zip -> English source / Spanish target id arrays (see the module docstring)."""
    pairs = read_pairs(raw / MANYTHINGS_ARCHIVE)
    order = np.random.default_rng(MANYTHINGS_SHUFFLE_SEED).permutation(len(pairs))
    n_train = len(pairs) * 4 // 5  # 80,000 of 100,000
    split_rows = {"train": order[:n_train], "test": order[n_train:]}
    src = [tokenize(en) for en, _ in pairs]
    tgt = [tokenize(es) for _, es in pairs]
    src_vocab = build_vocab([src[i] for i in split_rows["train"]])
    tgt_vocab = build_vocab([tgt[i] for i in split_rows["train"]])
    src_ids = {w: i for i, w in enumerate(src_vocab)}
    tgt_ids = {w: i for i, w in enumerate(tgt_vocab)}
    arrays: Arrays = {}
    truncated = {}
    for split, rows in split_rows.items():
        arrays[f"src_{split}"], arrays[f"src_len_{split}"] = encode_source(
            [_ids(src[i], src_ids) for i in rows], MANYTHINGS_MAXLEN)
        tgt_in, tgt_out, tgt_len = encode_target([_ids(tgt[i], tgt_ids) for i in rows], MANYTHINGS_MAXLEN)
        arrays[f"tgt_in_{split}"], arrays[f"tgt_out_{split}"], arrays[f"tgt_len_{split}"] = tgt_in, tgt_out, tgt_len
        arrays[f"y_{split}"] = tgt_out
        truncated[split] = {
            "src": int(sum(len(src[i]) > MANYTHINGS_MAXLEN for i in rows)),
            "tgt": int(sum(len(tgt[i]) > MANYTHINGS_MAXLEN - 1 for i in rows)),
        }
    meta = {
        "task": "seq2seq",
        "source_language": "eng",
        "target_language": "spa",
        "direction": "English -> Spanish (the paper's wording; the authors' notebooks translate Spanish -> English)",
        "pairs_used": len(pairs),
        "pairs_rule": f"the first {MANYTHINGS_PAIRS} lines of {MANYTHINGS_MEMBER} (columns 1 and 2), shuffled "
                      f"with seed {MANYTHINGS_SHUFFLE_SEED}, the first 4/5 for training",
        "max_len_src": MANYTHINGS_MAXLEN,
        "max_len_tgt": MANYTHINGS_MAXLEN,
        "truncated": truncated,
        "src_vocab_size": len(src_vocab),
        "tgt_vocab_size": len(tgt_vocab),
        "num_classes": len(tgt_vocab),
        "pad_id": PAD_ID,
        "unk_id": UNK_ID,
        "start_id": START_ID,
        "end_id": END_ID,
        "padding": "post",
        "tokenizer": TOKENIZER,
        "vocab_rule": "training sentences only; specials first, then by count, ties alphabetical; vocab[i] has id i",
        "y_key": "y_* is tgt_out_* (next target token at every decoder step)",
        "src_vocab": src_vocab,
        "tgt_vocab": tgt_vocab,
    }
    return arrays, meta


# ---------------------------------------------------------------- synthetic

# (English, Spanish, gender) nouns, (English, Spanish masculine) adjectives, (English, Spanish -ar) verbs.
_NOUNS = [
    ("book", "libro", "m"), ("house", "casa", "f"), ("car", "coche", "m"), ("dog", "perro", "m"),
    ("cat", "gato", "m"), ("table", "mesa", "f"), ("window", "ventana", "f"), ("door", "puerta", "f"),
    ("letter", "carta", "f"), ("apple", "manzana", "f"), ("key", "llave", "f"), ("chair", "silla", "f"),
    ("shirt", "camisa", "f"), ("phone", "teléfono", "m"), ("horse", "caballo", "m"), ("box", "caja", "f"),
    ("bicycle", "bicicleta", "f"), ("newspaper", "periódico", "m"), ("song", "canción", "f"),
    ("garden", "jardín", "m"), ("kitchen", "cocina", "f"), ("map", "mapa", "m"), ("clock", "reloj", "m"),
    ("hat", "sombrero", "m"), ("shoe", "zapato", "m"), ("cake", "pastel", "m"), ("river", "río", "m"),
    ("boat", "barco", "m"), ("flower", "flor", "f"), ("tree", "árbol", "m"), ("bed", "cama", "f"),
]
_ADJECTIVES = [
    ("red", "rojo"), ("small", "pequeño"), ("new", "nuevo"), ("old", "viejo"), ("white", "blanco"),
    ("black", "negro"), ("cheap", "barato"), ("expensive", "caro"), ("pretty", "bonito"), ("ugly", "feo"),
    ("clean", "limpio"), ("dirty", "sucio"), ("tall", "alto"), ("short", "bajo"), ("empty", "vacío"),
]
_VERBS = [
    ("buy", "comprar"), ("need", "necesitar"), ("wash", "lavar"), ("use", "usar"), ("carry", "llevar"),
    ("paint", "pintar"), ("draw", "dibujar"), ("clean", "limpiar"), ("watch", "mirar"), ("take", "tomar"),
    ("look for", "buscar"), ("fix", "arreglar"), ("keep", "guardar"), ("touch", "tocar"), ("love", "amar"),
    ("prepare", "preparar"), ("visit", "visitar"), ("call", "llamar"),
]
# Subject pronoun -> Spanish pronoun and the -ar present-tense ending.
_SUBJECTS = [("i", "yo", "o"), ("you", "tú", "as"), ("he", "él", "a"), ("she", "ella", "a"),
             ("we", "nosotros", "amos"), ("they", "ellos", "an")]
_SYLLABLES = "ba be bi bo bu da de di do du fa fe fi fo ka ke ki ko la le li lo ma me mi mo na ne ni no pa pe pi " \
             "po ra re ri ro sa se si so ta te ti to va ve vi vo za ze zi zo".split()


def _third_person(verb: str) -> str:
    head, _, rest = verb.partition(" ")
    if head.endswith(("s", "sh", "ch", "x", "o")):
        head += "es"
    elif head.endswith("y") and head[-2:-1] not in "aeiou":
        head = head[:-1] + "ies"
    else:
        head += "s"
    return f"{head} {rest}".strip()


class _PairWriter:
    """Draws (English, Spanish) sentence pairs from the grammar; made-up nouns give a long vocabulary tail."""

    def __init__(self, rng: np.random.Generator, made_up: int = 1500):
        self.rng = rng
        nouns = list(_NOUNS)
        seen = {en for en, _, _ in nouns}
        while len(nouns) < len(_NOUNS) + made_up:
            stem = "".join(_SYLLABLES[i] for i in rng.integers(0, len(_SYLLABLES), int(rng.integers(2, 4))))
            if stem not in seen:
                seen.add(stem)
                gender = "m" if rng.random() < 0.5 else "f"
                nouns.append((stem, stem + ("o" if gender == "m" else "a"), gender))
        self.nouns = nouns
        weights = 1.0 / np.arange(1, len(nouns) + 1)  # Zipf-like: the real nouns are the common ones
        self.noun_p = weights / weights.sum()

    def _noun_phrase(self, definite: bool, with_adjective: bool) -> tuple[str, str]:
        en, es, gender = self.nouns[self.rng.choice(len(self.nouns), p=self.noun_p)]
        det_en = "the" if definite else "a"
        det_es = {("m", True): "el", ("f", True): "la", ("m", False): "un", ("f", False): "una"}[(gender, definite)]
        if not with_adjective:
            return f"{det_en} {en}", f"{det_es} {es}"
        adj_en, adj_es = _ADJECTIVES[self.rng.integers(len(_ADJECTIVES))]
        if gender == "f" and adj_es.endswith("o"):
            adj_es = adj_es[:-1] + "a"
        return f"{det_en} {adj_en} {en}", f"{det_es} {es} {adj_es}"  # Spanish: noun before adjective

    def pair(self) -> tuple[str, str]:
        rng = self.rng
        kind = rng.random()
        verb_en, verb_es = _VERBS[rng.integers(len(_VERBS))]
        if kind < 0.15:  # a question to "you"
            obj_en, obj_es = self._noun_phrase(bool(rng.random() < 0.5), bool(rng.random() < 0.3))
            return f"Do you {verb_en} {obj_en}?", f"¿{verb_es[:-2]}as {obj_es}?"
        if kind < 0.3:  # "the X is ADJ."
            subj_en, subj_es = self._noun_phrase(True, False)
            adj_en, adj_es = _ADJECTIVES[rng.integers(len(_ADJECTIVES))]
            if subj_es.startswith("la ") and adj_es.endswith("o"):
                adj_es = adj_es[:-1] + "a"
            return f"{subj_en.capitalize()} is {adj_en}.", f"{subj_es.capitalize()} es {adj_es}."
        sub_en, sub_es, ending = _SUBJECTS[rng.integers(len(_SUBJECTS))]
        verb_form = _third_person(verb_en) if sub_en in ("he", "she") else verb_en
        obj_en, obj_es = self._noun_phrase(bool(rng.random() < 0.5), bool(rng.random() < 0.5))
        english = f"{sub_en.capitalize() if sub_en != 'i' else 'I'} {verb_form} {obj_en}."
        return english, f"{sub_es.capitalize()} {verb_es[:-2]}{ending} {obj_es}."


def spa_eng_zip_bytes(n_pairs: int, seed: int = 0) -> bytes:
    """The bytes of a synthetic spa-eng.zip (manythings' current layout: spa.txt with 3 columns, _about.txt)."""
    writer = _PairWriter(np.random.default_rng([seed, 0x5BA]))
    lines = []
    for i in range(n_pairs):
        english, spanish = writer.pair()
        lines.append(f"{english}\t{spanish}\tCC-BY 2.0 (France) Attribution: synthetic #{2 * i + 1} & #{2 * i + 2}")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, body in (("_about.txt", "Synthetic English-Spanish pairs (dlrepro data/manythings.py).\n"),
                           (MANYTHINGS_MEMBER, "\n".join(lines) + "\n")):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # fixed: reproducible bytes
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
            zf.writestr(info, body.encode("utf-8"))
    return buf.getvalue()


def write_manythings(raw: Path, n_train: int, n_test: int, seed: int = 0) -> list[Path]:
    """Write a synthetic spa-eng.zip of n_train + n_test pairs into ``raw`` (prepare splits them 4:1)."""
    write_bytes_atomic(raw / MANYTHINGS_ARCHIVE, spa_eng_zip_bytes(n_train + n_test, seed))
    return [raw / MANYTHINGS_ARCHIVE]
