"""`voicerag-calibrate` end to end, as a user runs it, over a small index of one's own (hashing encoder, sentence
chunks, no reader).

Too few unanswerable questions are refused before anything is searched, with the language, the count given and the count
needed; English questions alone fit English only, and the served pipeline judges Hindi questions by the portable
abstainer (not by the English fit), naming in `Result.meta['abstainer']` which abstainer judged each question."""
import json, os, subprocess, sys, warnings
from pathlib import Path
import pytest

import voicerag.serving.assembly as serving
from voicerag.answering.declining import Abstainer
from voicerag.core import Config, Passage
from voicerag.corpus.data import Corpus
from voicerag.cli import calibrate as main
from voicerag.serving.assembly import PORTABLE, build_named_index, calibration_path, load_pipeline

BIN = Path(sys.executable).parent
SMALL = dict(encoder='hashing', chunkers=('sentence',), reader=False)
NAMES = ['Velmora', 'Quintar', 'Brastow', 'Ombrel', 'Tazzik', 'Helvane', 'Corrigan', 'Dunmere', 'Fennick', 'Graulet',
         'Istrava', 'Jorvell', 'Kestrin', 'Lumbard', 'Morvath', 'Nyssal', 'Orrindel', 'Pellagor', 'Quorra', 'Rastikan']
THINGS = ['bridge', 'library', 'canal', 'observatory', 'harbour', 'mill', 'tower', 'museum', 'railway', 'theatre']
ANSWERABLE = [f'When was the {n} {THINGS[i % 10]} built?' for i, n in enumerate(NAMES)]
UNANSWERABLE = [f'What does {a} {b} taste like?' for a in ('saffron', 'mango', 'walnut', 'pepper', 'ginger', 'olive')
                for b in ('jam', 'soup', 'bread', 'cake', 'sauce', 'pickle', 'tea', 'curry', 'syrup', 'butter')]

def labelled(n_answerable:int, n_unanswerable:int) -> str:
    rows = [{'question': q, 'answerable': True} for q in ANSWERABLE[:n_answerable]]
    rows += [{'question': q, 'answerable': False} for q in UNANSWERABLE[:n_unanswerable]]
    return '\n'.join(json.dumps(r) for r in rows)

@pytest.fixture(scope='module')
def home(tmp_path_factory) -> Path:
    "A data home holding the index 'towns': one passage per landmark."
    home = tmp_path_factory.mktemp('home')
    corpus = Corpus([Passage(f'{n.lower()}.txt',
                             f'The {n} {THINGS[i % 10]} was built in {1800 + 7 * i} by the engineer '
                             f'{NAMES[(i + 7) % 20]}son. It stands beside the {NAMES[(i + 3) % 20]} river.', 'en',
                             f'{n.lower()}.txt')
                     for i, n in enumerate(NAMES)], name='towns')
    build_named_index(config(home), corpus, progress=False)
    return home

def config(home:Path) -> Config: return Config(index_dir=str(home/'indexes'), index_name='towns', **SMALL)

def calibrate(home:Path, questions:Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith('VOICERAG_')}
    env.update(VOICERAG_HOME=str(home), VOICERAG_ENCODER='hashing', VOICERAG_CHUNKERS='sentence', VOICERAG_READER='0')
    return subprocess.run([BIN/'voicerag-calibrate', '--name', 'towns', '--questions', str(questions)], env=env,
                          capture_output=True, text=True, timeout=300)

def test_too_few_unanswerable_is_refused_with_the_count_needed(home, tmp_path):
    questions = tmp_path/'few.jsonl'
    questions.write_text(labelled(3, 2), encoding='utf-8')
    done = calibrate(home, questions)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ('voicerag-calibrate: en: 2 unanswerable questions given; at least 52 are '
                                   'needed for a 95% upper bound of 5% false answers; add more'), done.stderr
    assert 'overlap' not in done.stderr and not calibration_path(config(home)).exists()

def test_english_only_leaves_hindi_to_the_portable_abstainer(home, tmp_path, monkeypatch, capsys):
    questions = tmp_path/'english.jsonl'
    questions.write_text(labelled(20, 60), encoding='utf-8')
    done = calibrate(home, questions)            # the shipped portable abstainer is for e5, not for the hashing encoder
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f'wrote {calibration_path(config(home))}: en: threshold'), done.stdout
    assert ('voicerag-calibrate: note: no labelled hi, mr, bn, as, gu, pa, or, ta, te, kn, ml, ur questions: they will '
            'be judged by the strictest threshold of this fit') in done.stderr
    assert 'since no portable abstainer fits encoder hashing' in done.stderr, done.stderr
    fitted = Abstainer.load(calibration_path(config(home)))
    assert (fitted.name, sorted(fitted.meta['fits'])) == ('towns', ['en'])

    # a portable abstainer for this encoder (the shipped one is for e5): it judges Hindi questions,
    # the English fit English ones
    portable = Abstainer('logistic', {'en': 0.2, 'hi': 0.9}, fitted.model,
                         {'name': PORTABLE, 'encoder': fitted.meta['encoder'], 'index': '*'})
    portable_path = portable.save(tmp_path/'calibration_portable.json')
    monkeypatch.setattr(serving, 'portable_calibration_path', lambda: portable_path)
    with warnings.catch_warnings():
        warnings.simplefilter('error')                                   # the designed split: nothing to warn about
        pipeline = load_pipeline(config(home))
    asked = {lang: pipeline.ask(ANSWERABLE[0], lang=lang) for lang in ('en', 'hi')}
    assert asked['en'].meta['abstainer']['name'] == 'towns'
    assert asked['en'].meta['abstainer']['threshold'] == round(fitted.thresholds['en'], 4)
    assert asked['hi'].meta['abstainer']['name'] == PORTABLE
    assert asked['hi'].meta['abstainer']['threshold'] == 0.9            # not the English fit's threshold
    assert asked['en'].state.value == 'answered'

    # and voicerag-calibrate says so
    for k in [k for k in os.environ if k.startswith('VOICERAG_')]: monkeypatch.delenv(k)
    for k, v in dict(VOICERAG_HOME=str(home), VOICERAG_ENCODER='hashing', VOICERAG_CHUNKERS='sentence',
                     VOICERAG_READER='0').items():
        monkeypatch.setenv(k, v)
    capsys.readouterr()
    assert main(['--name', 'towns', '--questions', str(questions)]) == 0
    assert ('voicerag-calibrate: note: no labelled hi, mr, bn, as, gu, pa, or, ta, te, kn, ml, ur questions: they will '
            'be judged by the portable abstainer (threshold 0.900), as before') in capsys.readouterr().err
