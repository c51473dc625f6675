"""Issue 12, point 7: `voicerag-build --engine ray` (Ray Data encoder actors, the [scale] extra) on a local Ray node
builds the index the local build builds."""
import json, os, time
from pathlib import Path
try: import ray                                                   # the [scale] extra, which `make install` installs
except ImportError as e: raise ImportError("Ray is missing: `make install` installs the [scale] extra") from e
from voicerag.retrieval.build import build_on_ray, build_streaming
from voicerag.core import Config
from voicerag.corpus.data import default_corpus
from voicerag.retrieval.encoders import make_encoder
from voicerag.retrieval.index import Retriever, load_index

def manifest(folder): return json.loads((Path(folder)/'manifest.json').read_text(encoding='utf-8'))

def test_ray_build_is_the_local_build(tmp_path, capsys):
    passages = list(default_corpus())
    # with titles: the setting reaches the actors (a build without them is 09a_build's, the same code)
    corpus, config = passages[:60] + passages[-60:], Config(encoder='hashing', index_titles=True)
    os.environ.setdefault('RAY_raylet_start_wait_time_s', '120')      # a busy 2-core machine starts Ray's agents slowly
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    started = time.perf_counter() - t0
    try:
        report = build_on_ray(corpus, config, tmp_path/'ray', workers=2, shard_passages=32, progress=False)
        assert ray.is_initialized()
    finally: ray.shutdown()
    built = time.perf_counter() - t0 - started
    assert ((report.shards, report.shards_kept, report.passages) == (4, 0, 120)
            and report.chunks_encoded == report.chunks)
    local = build_streaming(corpus, make_encoder('hashing'), tmp_path/'local', config, shard_passages=32,
                            progress=False)
    for key in ('files', 'counts', 'corpus', 'scripts', 'config'):
        assert manifest(tmp_path/'ray')[key] == manifest(local.folder)[key], key
    untitled = build_streaming(corpus, make_encoder('hashing'), tmp_path/'untitled', Config(encoder='hashing'),
                               shard_passages=32, progress=False)
    assert manifest(tmp_path/'ray')['files'] != manifest(untitled.folder)['files']     # the titles were read
    hashing = make_encoder('hashing')
    on_ray, here = (Retriever(load_index(f), hashing, config) for f in (tmp_path/'ray', local.folder))
    for q in ['Who won Super Bowl 50?', 'पैंथर्स डिफेंस ने कितने अंक दिए?', 'what is a sole proprietorship']:
        assert [h.chunk_id for h in on_ray.search(q).hits] == [h.chunk_id for h in here.search(q).hits]
    # all finished: Ray is not even started
    again = build_on_ray(corpus, config, tmp_path/'ray', shard_passages=32, progress=False)
    assert (again.shards_kept, again.chunks_encoded) == (4, 0) and not ray.is_initialized()
    with capsys.disabled():
        print(f'\nRay local node: started in {started:.1f} s, built 120 passages on 2 actors in {built:.1f} s')
