"""Resumable, checksummed downloads (voicerag.corpus.data.download), tested only against a local HTTP server on
127.0.0.1."""
import hashlib, random

import pyarrow as pa, pyarrow.parquet as pq
import pytest

from voicerag.fakes import RangeFileServer
from voicerag.paths import data_dir
from voicerag.corpus.data import (DownloadError, download, fetch_msmarco_xi, iter_jsonl, load_msmarco_xi,
                           msmarco_xi_url)

PAYLOAD = random.Random(0).randbytes(300_000)
SHA = hashlib.sha256(PAYLOAD).hexdigest()


@pytest.fixture
def server():
    with RangeFileServer({'/f.bin': PAYLOAD}) as srv: yield srv


def _get(server, tmp_path, **kw):
    return download(f'{server.url}/f.bin', tmp_path/'f.bin', progress=False, **kw)


def test_full_download_is_verified_and_renamed(server, tmp_path):
    path = _get(server, tmp_path, sha256=SHA)
    assert path.read_bytes() == PAYLOAD
    assert sorted(p.name for p in tmp_path.iterdir()) == ['f.bin']
    assert server.requests == [('/f.bin', None)]


def test_interrupted_download_resumes_on_the_next_call(server, tmp_path):
    server.cut['/f.bin'] = [100_000]
    with pytest.raises(DownloadError, match='interrupted after 100000 bytes.*run again to resume'):
        _get(server, tmp_path, sha256=SHA, retries=0)
    assert (tmp_path/'f.bin.part').stat().st_size == 100_000 and not (tmp_path/'f.bin').exists()
    path = _get(server, tmp_path, sha256=SHA)
    assert path.read_bytes() == PAYLOAD and not (tmp_path/'f.bin.part').exists()
    assert server.requests == [('/f.bin', None), ('/f.bin', 'bytes=100000-')]


def test_retries_resume_within_one_call(server, tmp_path):
    server.cut['/f.bin'] = [50_000, 70_000]        # two drops, then a full response
    assert _get(server, tmp_path, sha256=SHA, retries=2).read_bytes() == PAYLOAD
    assert [r for _, r in server.requests] == [None, 'bytes=50000-', 'bytes=120000-']


def test_server_ignoring_range_restarts_cleanly(server, tmp_path):
    server.cut['/f.bin'] = [100_000]
    server.ignore_range.add('/f.bin')
    assert _get(server, tmp_path, sha256=SHA, retries=1).read_bytes() == PAYLOAD


def test_complete_part_file_is_finished_without_refetching(server, tmp_path):
    (tmp_path/'f.bin.part').write_bytes(PAYLOAD)   # the previous run died between the last byte and the rename
    assert _get(server, tmp_path, sha256=SHA).read_bytes() == PAYLOAD
    assert server.requests == [('/f.bin', 'bytes=300000-')]


def test_part_longer_than_the_remote_file_starts_over(server, tmp_path):
    (tmp_path/'f.bin.part').write_bytes(PAYLOAD + b'stale tail')
    assert _get(server, tmp_path, sha256=SHA).read_bytes() == PAYLOAD
    assert [r for _, r in server.requests] == ['bytes=300010-', None]


def test_checksum_mismatch_raises_and_leaves_no_file(server, tmp_path):
    with pytest.raises(DownloadError, match='checksum mismatch.*partial file was removed'):
        _get(server, tmp_path, sha256='0' * 64)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_part_is_caught_by_the_checksum(server, tmp_path):
    (tmp_path/'f.bin.part').write_bytes(b'x' * 1000)   # a leftover from some other file
    with pytest.raises(DownloadError, match='checksum mismatch'):
        _get(server, tmp_path, sha256=SHA)
    assert list(tmp_path.iterdir()) == []
    assert _get(server, tmp_path, sha256=SHA).read_bytes() == PAYLOAD   # and the next attempt starts clean


@pytest.mark.parametrize('path', ['/missing.bin', '/validation/marval.parquet'])
def test_404_is_a_clear_error(server, tmp_path, path):
    with pytest.raises(DownloadError, match=f'HTTP 404 Not Found for {server.url}{path}'):
        download(f'{server.url}{path}', tmp_path/'x', progress=False)
    assert list(tmp_path.iterdir()) == []


def test_redirects_are_followed(server, tmp_path):
    server.redirects['/resolve/f.bin'] = '/f.bin'      # the hub answers resolve/ URLs with a redirect to its CDN
    path = download(f'{server.url}/resolve/f.bin', tmp_path/'f.bin', sha256=SHA, progress=False)
    assert path.read_bytes() == PAYLOAD


def test_existing_file_is_kept_or_refused(server, tmp_path):
    (tmp_path/'f.bin').write_bytes(PAYLOAD)
    assert _get(server, tmp_path, sha256=SHA).read_bytes() == PAYLOAD
    assert server.requests == []                       # verified locally, nothing fetched
    with pytest.raises(DownloadError, match='exists but its sha256'):
        _get(server, tmp_path, sha256='0' * 64)


def test_unreachable_server_is_a_download_error(tmp_path):
    srv = RangeFileServer(); port = srv.server_port; srv.server_close()   # a port nobody listens on
    with pytest.raises(DownloadError, match='interrupted after 0 bytes'):
        download(f'http://127.0.0.1:{port}/f.bin', tmp_path/'f.bin', retries=1, progress=False)


def test_msmarco_xi_parquet_download_loads_like_the_vendored_rows(server, tmp_path):
    rows = [row for _, row in iter_jsonl(data_dir()/'msmarco_xi_hin_val100.jsonl.gz')]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path/'src.parquet')
    blob = (tmp_path/'src.parquet').read_bytes()
    server.files['/validation/hinval.parquet'] = blob
    server.cut['/validation/hinval.parquet'] = [len(blob) // 3]
    path = fetch_msmarco_xi('hi', 'validation', folder=tmp_path/'dl', sha256=hashlib.sha256(blob).hexdigest(),
                            base_url=server.url, progress=False)
    assert path == tmp_path/'dl'/'hinval.parquet'
    assert msmarco_xi_url('hi', 'validation', server.url) == f'{server.url}/validation/hinval.parquet'
    got, vendored = load_msmarco_xi(path), load_msmarco_xi()
    assert got.corpus.checksum() == vendored.corpus.checksum()
    assert list(got.queries) == list(vendored.queries) and dict(got.qrels) == dict(vendored.qrels)
