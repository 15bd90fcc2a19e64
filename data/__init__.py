"""dlrepro's data stage: dataset manifest, download (mirrors, resume, sha256), prepare, synthetic data.

Run ``python -m data --help`` from the repo root. Public API (other code imports these modules):

- data.manifest:  load_manifest(path=None) -> Manifest; Manifest.from_dict(dict); FileSpec, DatasetSpec;
                  FIRST_DOWNLOAD (a sha256 no public source pins: the first download is kept at the
                  manifest's size and its sha256 recorded; later copies must match it)
- data.digests:   the local lock of those sha256s (<root>/raw/digests.local.json): read, recorded,
                  record, forget, lock_for(raw folder); the VERIFIED_* words meta.json and run.json use
- data.download:  download(dataset, root, *, mirror=None, manifest=None, retries=2, timeout=60.0,
                  progress=True) -> raw folder; fetch_file(...); candidate_urls(...)
- data.prepare:   prepare(dataset, raw, out, *, source="real", manifest=None, force=False,
                  progress=True) -> prepared folder; preparers(manifest=None), find_preparer(name)
- data.synthetic: make_synthetic(dataset, root, *, sizes=None, seed=0, progress=True) -> prepared folder;
                  generate(dataset, root, *, sizes=None, seed=0, progress=False) -> raw folder;
                  GENERATORS {name: writer(raw, n_train, n_test, seed)}, imdb_archive_bytes(...)
- data.formats:   read_idx(path), parse_idx(bytes), idx_bytes(array), read_tar_members, tar_add, RawFormatError
- data.text:      tokenize(text) (the IMDB tokenizer)
- data.paths:     raw_dir(root, dataset, source="real"), prepared_dir (from bench.prepared)
- data.cifar, data.svhn, data.ptb, data.manythings: one module per dataset, each with its prepare
                  function prepare_<name> (found by name: data.prepare.find_preparer) and synthetic writer (in
                  data.synthetic.GENERATORS); data.digits draws the synthetic digits (MNIST, SVHN)

Only the standard library and numpy are needed, and scipy for SVHN's .mat files (imported only there).
"""
