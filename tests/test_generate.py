"""voicerag.answering.generate end to end against the local fake server (voicerag.fakes), for both providers.

Every failure case runs on Groq and on Anthropic; the last test plants fake keys, runs all of them
with a server that echoes the key back in its error messages, and checks the key appears nowhere
we return, raise or log.
"""
import json, logging, socket, time, traceback
from dataclasses import dataclass
from typing import Callable

import pytest
import regex

from voicerag.core import Answer, Citation, Passage, VoiceragError
from voicerag.fakes import AnthropicAPI, FakeServer, GroqAPI, Reply, fake_llm_server, malformed_json, slow
from voicerag.answering.generate import (DISCLAIMERS, SENTINEL, AnthropicClient, GenerationError, GroqClient, LLMClient,
                               Unanswerable, generate_grounded, generate_open)
from voicerag.answering.guardrails import check_grounding

KEYS = {'GROQ_API_KEY': 'gsk_SECRET_groq_test_key_7f3a9c51',
        'ANTHROPIC_API_KEY': 'sk-ant-SECRET-anthropic-test-key-2b8e1d44'}
EN = Passage('xquad/00/0@en', 'The Panthers defense gave up just 308 points, ranking sixth in the league.', 'en',
             'xquad/00/0', 'Super_Bowl_50')
HI = Passage('xquad/00/0@hi', 'पैंथर्स की डिफ़ेन्स ने लीग में केवल 308 अंक दिए और छठे स्थान पर रहे।', 'hi',
             'xquad/00/0', 'Super_Bowl_50')
OTHER = Passage('xquad/00/1@en', 'The Broncos defense ranked first in the NFL in yards allowed.', 'en', 'xquad/00/1',
                'Super_Bowl_50')
QUESTION = 'How many points did the Panthers defense surrender?'


@dataclass
class Provider:
    "How a test speaks to one provider through the fake server."
    name: str
    path: str
    key_env: str
    auth_header: str
    make: Callable[..., LLMClient]
    answer: Callable[[str, list], Reply]       # a grounded reply: claim text and cited passage numbers
    unanswerable: Callable[[], Reply]
    plain: Callable[[str], Reply]             # a plain-text reply (open mode)
    error: Callable[..., Reply]               # error(status, message, retry_after=None)
    missing_fields: Callable[[], Reply]


GROQ = Provider(
    'groq', GroqAPI.PATH, 'GROQ_API_KEY', 'authorization',
    lambda srv, **kw: GroqClient(base_url=srv.url + '/openai/v1', **kw),
    lambda claim, nums: GroqAPI.ok(claim + ''.join(f' [{n}]' for n in nums) + '.'),
    lambda: GroqAPI.ok(SENTINEL),
    GroqAPI.ok,
    lambda status, message='error', retry_after=None: GroqAPI.error(status, message, retry_after=retry_after),
    GroqAPI.missing_fields)

ANTHROPIC = Provider(
    'anthropic', AnthropicAPI.PATH, 'ANTHROPIC_API_KEY', 'x-api-key',
    lambda srv, **kw: AnthropicClient(base_url=srv.url, **kw),
    lambda claim, nums: AnthropicAPI.ok_tool({'answer': claim + '.', 'supported': True, 'citations': list(nums)}),
    lambda: AnthropicAPI.ok_tool({'answer': '', 'supported': False, 'citations': []}),
    AnthropicAPI.ok_text,
    lambda status, message='error', retry_after=None: AnthropicAPI.error(status, 'api_error', message, retry_after),
    AnthropicAPI.missing_fields)

PROVIDERS = [GROQ, ANTHROPIC]


@pytest.fixture
def keys(monkeypatch):
    for name, value in KEYS.items(): monkeypatch.setenv(name, value)
    return KEYS

@pytest.fixture
def server():
    with fake_llm_server() as srv: yield srv

@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def provider(request): return request.param

@pytest.fixture
def client(provider, server, keys):
    with provider.make(server, timeout=0.5, max_retry_wait=0.5, backoff=0.01) as c: yield c

def fail(provider:Provider, server:FakeServer, client, *replies, call=None) -> tuple[GenerationError, int]:
    "Script `replies`, make a grounded call, return the GenerationError and the number of requests made."
    server.clear(); server.script(provider.path, *replies)
    with pytest.raises(GenerationError) as info:
        (call or (lambda: generate_grounded(client, QUESTION, [EN, OTHER], 'en')))()
    return info.value, len(server.requests)


# ---- the request the clients send --------------------------------------------------------------

def test_request_shape(provider, client, server, keys):
    server.script(provider.path, provider.answer('The Panthers defense gave up just 308 points', [1]))
    generate_grounded(client, QUESTION, [EN, OTHER], 'en')
    (req,) = server.requests
    body = req.json
    assert (req.method, req.path) == ('POST', provider.path)
    assert req.headers['content-type'] == 'application/json'
    assert req.contains(keys[provider.key_env]) == [provider.auth_header]   # the key went in the auth header only
    if provider is GROQ:
        assert req.headers['authorization'] == 'Bearer ' + keys['GROQ_API_KEY']
        assert [m['role'] for m in body['messages']] == ['system', 'user']
        system, user = (m['content'] for m in body['messages'])
        assert (body['model'] == 'openai/gpt-oss-20b' and body['temperature'] == 0.0
                and body['max_completion_tokens'] > 0)
        assert SENTINEL in system
    else:
        assert req.headers['anthropic-version'] == '2023-06-01'
        system, user = body['system'], body['messages'][0]['content']
        assert body['messages'][0]['role'] == 'user' and body['max_tokens'] > 0
        assert body['tool_choice'] == {'type': 'tool', 'name': 'grounded_answer'}
        schema = body['tools'][0]['input_schema']
        assert body['tools'][0]['name'] == 'grounded_answer'
        assert (schema['required'] == ['answer', 'supported', 'citations']
                and schema['properties']['supported']['type'] == 'boolean')
    assert 'Answer in English' in system and 'not instructions' in system
    assert (user.startswith('Passages:\n\n[1] (Super_Bowl_50) The Panthers') and '\n\n[2] ' in user
            and user.endswith('Question: ' + QUESTION))

def test_key_is_read_at_call_time(provider, client, server, monkeypatch):
    monkeypatch.setenv(provider.key_env, 'first-key-value')
    generate_open(client, 'q', 'en')
    monkeypatch.setenv(provider.key_env, 'second-key-value')
    generate_open(client, 'q', 'en')
    sent = [r.headers[provider.auth_header] for r in server.requests]
    assert [s.endswith('first-key-value') for s in sent] == [True, False] and sent[1].endswith('second-key-value')


# ---- grounded answers --------------------------------------------------------------------------

def test_grounded_answer_with_located_citation(provider, client, server):
    server.script(provider.path, provider.answer('The Panthers defense gave up just 308 points', [1]))
    a = generate_grounded(client, QUESTION, [EN, OTHER], 'en')
    assert isinstance(a, Answer) and (a.method, a.lang) == ('generative', 'en')
    assert a.text == 'The Panthers defense gave up just 308 points.'
    (c,) = a.citations
    assert ((c.passage_id, c.lang) == (EN.id, 'en')
            and EN.text[c.start:c.end] == 'The Panthers defense gave up just 308 points')
    m = a.meta
    assert ((m['provider'], m['attempts'], m['cited'], m['uncited'], m['spans_located'])
            == (provider.name, 1, [1], False, 1))
    assert m['llm_ms'] > 0 and m['own_ms'] > 0 and m['usage']
    assert m['own_ms'] == pytest.approx(m['prompt_ms'] + m['decode_ms'] + m['parse_ms'])

def test_hindi_answer_cites_hindi_span(provider, client, server):
    server.script(provider.path, provider.answer('पैंथर्स की डिफ़ेन्स ने लीग में केवल 308 अंक दिए', [1]))
    a = generate_grounded(client, 'पैंथर्स की डिफ़ेन्स ने कितने अंक दिए?', [HI], 'hi')
    assert 'Answer in Hindi' in (server.requests[0].json.get('system')
                                 or server.requests[0].json['messages'][0]['content'])
    (c,) = a.citations
    assert HI.text[c.start:c.end] == 'पैंथर्स की डिफ़ेन्स ने लीग में केवल 308 अंक दिए' and c.lang == 'hi'

def test_paraphrase_cites_whole_passage(provider, client, server):
    server.script(provider.path, provider.answer('They allowed 308 points', [2, 1]))
    a = generate_grounded(client, QUESTION, [EN, OTHER], 'en')
    assert a.citations == [Citation(OTHER.id, 0, len(OTHER.text), 'en'), Citation(EN.id, 0, len(EN.text), 'en')]
    assert a.meta['spans_located'] == 0

def test_out_of_range_citation_numbers_are_dropped(provider, client, server):
    server.script(provider.path, provider.answer('The Panthers defense gave up just 308 points', [7, 1]))
    a = generate_grounded(client, QUESTION, [EN, OTHER], 'en')
    assert [c.passage_id for c in a.citations] == [EN.id] and a.meta['invalid_citations'] == [7]

def test_unanswerable(provider, client, server):
    server.script(provider.path, provider.unanswerable())
    u = generate_grounded(client, 'Who won the 1998 World Cup?', [EN, OTHER], 'en')
    assert isinstance(u, Unanswerable) and u.reason == ('sentinel' if provider is GROQ else 'unsupported')
    assert u.lang == 'en' and u.meta['llm_ms'] > 0 and u.meta['provider'] == provider.name

def test_sentinel_with_text_is_still_unanswerable(provider, client, server):
    server.script(provider.path, provider.answer(f'{SENTINEL}. But France won it', [1]))
    assert isinstance(generate_grounded(client, 'Who won the 1998 World Cup?', [EN], 'en'), Unanswerable)

def test_answer_missing_the_sentinel_is_returned_uncited(provider, client, server):
    """The passages do not answer, the model answers anyway and cites nothing: returned, flagged, for the grounding
    check."""
    server.script(provider.path, provider.answer('France won the 1998 World Cup', []))
    a = generate_grounded(client, 'Who won the 1998 World Cup?', [EN, OTHER], 'en')
    assert isinstance(a, Answer) and a.text == 'France won the 1998 World Cup.'
    assert a.citations == [] and a.meta['uncited'] is True

def test_number_not_in_passages_is_returned_as_said(provider, client, server):
    "Generation does not verify: the guardrails' grounding check (another module) discards this answer."
    server.script(provider.path, provider.answer('The Panthers defense gave up 412 points', [1]))
    a = generate_grounded(client, QUESTION, [EN, OTHER], 'en')
    assert '412' in a.text and [c.passage_id for c in a.citations] == [EN.id]
    v = check_grounding(a.text, [EN.text])                                            # that check, on the cited passage
    assert (v.reason, v.facts) == ('number_not_in_source', {'missing': ['412']})

def test_structured_reply_with_missing_field_is_malformed(server, keys):
    with ANTHROPIC.make(server, timeout=0.5) as claude:
        e, n = fail(ANTHROPIC, server, claude, AnthropicAPI.ok_tool({'answer': 'x', 'citations': [1]}))
        assert (e.kind, n) == ('malformed', 1) and 'supported' in e.details['problem']
        e, _ = fail(ANTHROPIC, server, claude, AnthropicAPI.ok_text('plain text instead of the tool'))
        assert e.kind == 'malformed' and 'tool_use' in e.details['problem']
        e, _ = fail(ANTHROPIC, server, claude,
                    AnthropicAPI.ok_tool({'answer': 'x', 'supported': 'yes', 'citations': [1]}))
        assert e.kind == 'malformed'

def test_empty_answer_is_malformed(provider, client, server):
    e, _ = fail(provider, server, client, provider.answer('', []))
    assert e.kind == 'malformed' and e.details['problem'] == 'empty answer'


# ---- the open-knowledge fallback ---------------------------------------------------------------

@pytest.mark.parametrize('lang, model_text',
                         [('en', 'France won the 1998 World Cup.'), ('hi', 'फ़्रांस ने 1998 का विश्व कप जीता था।')])
def test_open_answer_has_disclaimer_and_no_citations(provider, client, server, lang, model_text):
    server.script(provider.path, provider.plain(model_text))
    a = generate_open(client, 'Who won the 1998 World Cup?', lang)
    assert a.text == f'{DISCLAIMERS[lang]} {model_text}'
    assert (a.method, a.citations, a.lang, a.meta['grounded']) == ('open_llm', [], lang, False)
    assert a.meta['llm_ms'] > 0
    body = server.requests[-1].json
    assert 'tools' not in body
    assert 'disclaimer' not in json.dumps(body, ensure_ascii=False).lower()     # never asked of the model

def test_open_answer_keeps_our_disclaimer_even_if_model_adds_one(provider, client, server):
    server.script(provider.path, provider.plain('Disclaimer: I may be wrong. France won.'))
    assert generate_open(client, 'q', 'en').text.startswith(DISCLAIMERS['en'] + ' Disclaimer: I may be wrong.')

def test_open_answer_in_another_language_gets_the_english_disclaimer(provider, client, server):
    assert generate_open(client, 'q', 'ta').text.startswith(DISCLAIMERS['en'])

def test_open_empty_reply_is_malformed(provider, client, server):
    e, _ = fail(provider, server, client, provider.plain('   '), call=lambda: generate_open(client, 'q', 'en'))
    assert e.kind == 'malformed'


# ---- failures ----------------------------------------------------------------------------------

def test_401_fails_at_once(provider, client, server):
    e, n = fail(provider, server, client, provider.error(401, 'invalid key'))
    assert (e.kind, n, e.details['status'], e.details['provider']) == ('auth', 1, 401, provider.name)
    assert isinstance(e, VoiceragError) and not e.retryable

def test_429_is_retried_once_then_reported(provider, client, server):
    e, n = fail(provider, server, client, provider.error(429, 'slow down', 0.05),
                provider.error(429, 'slow down', 0.05))
    assert (e.kind, n, e.details['retry_after'], e.details['attempts']) == ('rate_limited', 2, 0.05, 2)
    assert 'try again in a moment' in str(e) and 'थोड़ी देर में' in e.user_message('hi')

def test_429_then_success_recovers(provider, client, server):
    server.script(provider.path, provider.error(429, 'slow down', 0.05),
                  provider.answer('The Panthers defense gave up just 308 points', [1]))
    a = generate_grounded(client, QUESTION, [EN], 'en')
    assert a.meta['attempts'] == 2 and a.meta['llm_ms'] >= 50          # the wait is model time, not ours

def test_429_with_long_retry_after_fails_at_once(provider, client, server):
    e, n = fail(provider, server, client, provider.error(429, 'slow down', 30))
    assert (e.kind, n, e.details['retry_after']) == ('rate_limited', 1, 30.0)

@pytest.mark.parametrize('status', [500, 503, 529])
def test_server_error_is_retried_once(provider, client, server, status):
    e, n = fail(provider, server, client, provider.error(status, 'boom'), provider.error(status, 'boom'))
    assert (e.kind, n, e.details['status']) == ('server', 2, status)
    server.clear(); server.script(provider.path, provider.error(status, 'boom'),
                                  provider.answer('The Panthers defense gave up just 308 points', [1]))
    assert generate_grounded(client, QUESTION, [EN], 'en').meta['attempts'] == 2

def test_other_4xx_is_rejected_without_retry(provider, client, server):
    e, n = fail(provider, server, client, provider.error(404, 'model not found'))
    assert (e.kind, n, e.details['provider_message']) == ('rejected', 1, 'model not found')

def test_timeout(provider, client, server):
    t0 = time.perf_counter()
    e, n = fail(provider, server, client, slow(provider.answer('late', [1]), 5))
    assert (e.kind, n, e.details['cause']) == ('timeout', 1, 'ReadTimeout')
    assert time.perf_counter() - t0 < 2.5 and 400 <= e.details['llm_ms'] < 2500

def test_malformed_json(provider, client, server):
    e, n = fail(provider, server, client, malformed_json())
    assert (e.kind, n, e.details['problem']) == ('malformed', 1, 'reply is not JSON')

def test_missing_fields(provider, client, server):
    e, _ = fail(provider, server, client, provider.missing_fields())
    assert e.kind == 'malformed' and e.details['problem'].startswith('no [')

def test_network_error_is_retried_once(provider, keys):
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]        # a port nobody listens on once closed
    fake = type('Dead', (), {'url': f'http://127.0.0.1:{port}'})()
    with provider.make(fake, timeout=0.5, backoff=0.01) as c:
        with pytest.raises(GenerationError) as info: generate_open(c, 'q', 'en')
    assert ((info.value.kind, info.value.details['attempts'], info.value.details['cause'])
            == ('network', 2, 'ConnectError'))

def test_missing_key_is_a_config_error_naming_the_variable(provider, client, server, monkeypatch):
    monkeypatch.delenv(provider.key_env)
    with pytest.raises(GenerationError) as info: generate_grounded(client, QUESTION, [EN], 'en')
    e = info.value
    assert e.kind == 'config' and provider.key_env in str(e) and e.details['env_var'] == provider.key_env
    assert server.requests == []

def test_user_messages_carry_no_codes_or_exception_text(provider, client, server):
    cases = [provider.error(401, 'x'), provider.error(429, 'x', 30), provider.error(500, 'x'), provider.error(404, 'x'),
             slow(provider.answer('late', [1]), 5), malformed_json(), provider.missing_fields()]
    for reply in cases:
        e, _ = fail(provider, server, client, reply, reply)
        for message in (str(e), e.user_message('hi')):
            assert not regex.search(r'\d', message), message
            assert not regex.search(r'Error|Exception|httpx|Timeout|JSON', message), message

def test_generate_grounded_needs_passages(client):
    with pytest.raises(ValueError, match='at least one passage'): generate_grounded(client, 'q', [], 'en')


# ---- the key never leaks -----------------------------------------------------------------------

def _echo(provider:Provider, status:int, retry_after=None) -> Reply:
    "An error whose message repeats the credential the client sent, as some APIs do."
    return provider.error(status, lambda req: f'bad credential {req.headers.get(provider.auth_header)}', retry_after)

def test_key_never_appears_in_errors_meta_or_logs(caplog, capsys, keys, server):
    caplog.set_level(logging.DEBUG)                 # our logger, httpx and httpcore at their most verbose
    seen: list[str] = []
    for provider in PROVIDERS:
        with provider.make(server, timeout=0.3, max_retry_wait=0.5, backoff=0.01) as client:
            seen.append(repr(client))
            failures = [(_echo(provider, 401),), (_echo(provider, 403),),
                        (_echo(provider, 429, 0.01), _echo(provider, 429, 0.01)),
                        (_echo(provider, 429, 60),), (_echo(provider, 500), _echo(provider, 503)),
                        (_echo(provider, 400),),
                        (slow(provider.answer('late', [1]), 5),), (malformed_json(),), (provider.missing_fields(),)]
            for replies in failures:
                for call in (lambda: generate_grounded(client, QUESTION, [EN, OTHER], 'en'),
                             lambda: generate_open(client, 'q', 'hi')):
                    e, _ = fail(provider, server, client, *replies, call=call)
                    seen += [str(e), repr(e), e.user_message('hi'), json.dumps(e.details, default=str), repr(e.details),
                             ''.join(traceback.format_exception(e))]
            for reply, call in [(provider.answer('The Panthers defense gave up just 308 points', [1]),
                                 lambda: generate_grounded(client, QUESTION, [EN], 'en')),
                                (provider.unanswerable(), lambda: generate_grounded(client, QUESTION, [EN], 'en')),
                                (provider.plain('France won.'), lambda: generate_open(client, 'q', 'en'))]:
                server.clear(); server.script(provider.path, reply)
                out = call()
                seen += [repr(out), json.dumps(out.meta, default=str)]
            # it was sent
            assert any(keys[provider.key_env] in r.headers.get(provider.auth_header, '') for r in server.requests)
    captured = capsys.readouterr()
    seen += [caplog.text, captured.out, captured.err]
    assert caplog.records, 'logging was captured'
    for key in keys.values():
        leaks = [s for s in seen if key in s]
        assert not leaks, leaks[:1]
