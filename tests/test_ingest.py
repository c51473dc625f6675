"""A corpus of one's own, end to end, as a user runs it: `voicerag-build --corpus SRC --name NAME`, then `voicerag-ask
--name NAME`.

In a temporary data home, with the hashing encoder, sentence chunks and no reader (fast): a folder of a .txt, a .md, an
.html and a .pdf file, and a CSV table, are each built and asked; a bad document or CSV row is left out and listed at
the end of the build and in the manifest, and `--strict` stops at it with exit status 2, naming the file, row and field;
a quote that is never closed stops the build (it would read the next rows into one cell), and so does a folder of which
nothing could be read; errors name the flag, and the columns as the user named them; Markdown is indexed without its
markup, HTML without its navigation and footers, and a heading as a sentence of its own; `--name default` is refused;
and the default index already in that home is untouched by all of it. `nbs/corpus/02a_ingest.ipynb` tests every reader
on its own."""
import json, os, subprocess, sys
from pathlib import Path
import pytest

from voicerag.core import Config, Passage
from voicerag.corpus.data import Corpus
from voicerag.retrieval.encoders import make_encoder
from voicerag.fakes import text_pdf
from voicerag.retrieval.index import build_index, index_path, save_index

BIN = Path(sys.executable).parent
SMALL = dict(encoder='hashing', chunkers=('sentence',), reader=False)
QUESTIONS = {'notes.txt': 'When were the first Darjeeling tea gardens planted?',
             'guides/brewing.md': 'At what temperature should green tea be brewed?',
             'oolong.html': 'How oxidised is oolong tea?',
             'boston.pdf': 'When did the Boston Tea Party take place?'}

@pytest.fixture(scope='module')
def home(tmp_path_factory) -> Path:
    "A data home that already holds a (tiny) default index."
    home = tmp_path_factory.mktemp('home')
    config = Config(index_dir=str(home/'indexes'), **SMALL)
    corpus = Corpus([Passage('x@en', 'The Panthers defense gave up just 308 points.', 'en', 'x')], name='default')
    save_index(build_index(corpus, make_encoder('hashing'), config, progress=False), index_path(config))
    return home

@pytest.fixture(scope='module')
def docs(tmp_path_factory) -> Path:
    "A folder with one document of each kind, on different subjects."
    docs = tmp_path_factory.mktemp('docs')
    (docs/'guides').mkdir()
    (docs/'notes.txt').write_text('The first Darjeeling tea gardens were planted in 1841 by Archibald Campbell.\n',
                                  encoding='utf-8')
    (docs/'guides'/'brewing.md').write_text('# Brewing green tea\n\nGreen tea should be brewed with water at 80 '
                                            'degrees Celsius for two minutes.\n', encoding='utf-8')
    (docs/'oolong.html').write_text('<html><head><title>Oolong</title><script>var brewed = '
                                    '"oxidised";</script></head><body><p>Oolong tea is partially oxidised, between '
                                    'green and black tea.</p></body></html>', encoding='utf-8')
    text_pdf(docs/'boston.pdf', ['The Boston Tea Party took place in December 1773 in Boston harbour.'], title='Boston')
    return docs

def run(home:Path, script:str, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith('VOICERAG_')}
    env.update(VOICERAG_HOME=str(home), VOICERAG_ENCODER='hashing', VOICERAG_CHUNKERS='sentence', VOICERAG_READER='0')
    return subprocess.run([BIN/script, *map(str, args)], env=env, capture_output=True, text=True, timeout=300)

def ask(home:Path, name:str, question:str) -> dict:
    done = run(home, 'voicerag-ask', '--name', name, '--json', question)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)

def default_state(home:Path) -> dict:
    "Every file of the default index with its bytes: what must not change."
    folder = home/'indexes'/'default'
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob('*')) if p.is_file()}

def test_folder_of_documents(home, docs):
    before = default_state(home)
    done = run(home, 'voicerag-build', '--corpus', docs, '--name', 'mine')
    assert done.returncode == 0, done.stderr
    assert f"built {home/'indexes'/'mine'}" in done.stdout
    for file, question in QUESTIONS.items():
        result = ask(home, 'mine', question)
        assert result['citations'] and result['citations'][0]['passage_id'] == file, (question, result)
    assert default_state(home) == before
    assert sorted(p.name for p in (home/'indexes').iterdir()) == ['default', 'mine']      # no temporary folder left

def test_csv_with_own_columns(home, tmp_path):
    table = tmp_path/'faq.csv'
    table.write_text('question_id,answer_text,topic\n'
                     'q1,"Matcha is powdered green tea, whisked with hot water.",matcha\n'
                     'q2,"Chai is black tea boiled with milk, sugar and spices.",chai\n', encoding='utf-8')
    done = run(home, 'voicerag-build', '--corpus', table, '--name', 'faq', '--id-col', 'question_id',
               '--text-col', 'answer_text', '--title-col', 'topic', '--lang', 'en')
    assert done.returncode == 0, done.stderr
    assert ask(home, 'faq', 'What is chai boiled with?')['citations'][0]['passage_id'] == 'q2'

def manifest_of(home:Path, name:str) -> dict:
    return json.loads((home/'indexes'/name/'manifest.json').read_text(encoding='utf-8'))

def test_bad_row_is_skipped_or_with_strict_named(home, tmp_path):
    before = default_state(home)
    table = tmp_path/'bad.csv'
    table.write_text('id,text\na,Fine text.\nb,   \n', encoding='utf-8')
    done = run(home, 'voicerag-build', '--corpus', table, '--name', 'rows')
    assert done.returncode == 0, done.stderr
    assert done.stderr.endswith(f'\nskipped 1 bad row in file {table}:\n'
                                f'  row 3: empty text (field text)\n'), done.stderr
    assert manifest_of(home, 'rows')['corpus']['skipped']['bad'] == [{'row': 3, 'reason': 'empty text (field text)'}]
    assert passages(home, 'rows') == {'a': 'Fine text.'}
    done = run(home, 'voicerag-build', '--corpus', table, '--name', 'strict', '--strict')
    assert done.returncode == 2, done.stderr
    assert done.stderr == f'voicerag: --corpus: empty text (file {table}, row 3, field text)\n'
    assert not (home/'indexes'/'strict').exists() and default_state(home) == before

def test_folder_with_bad_documents(home, tmp_path):
    folder = tmp_path/'mixed'
    (folder/'old').mkdir(parents=True)
    (folder/'good.txt').write_text('Kombucha is fermented sweet tea.\n', encoding='utf-8')
    (folder/'empty.txt').write_text('\n', encoding='utf-8')
    (folder/'old'/'scan.txt').write_bytes(b'\x89PNG\r\n\x1a\n\x00\x00')
    (folder/'guide.rst').write_text('Tea\n===\n', encoding='utf-8')
    (folder/'a.json').write_text('{}', encoding='utf-8'); (folder/'b.json').write_text('{}', encoding='utf-8')
    done = run(home, 'voicerag-build', '--corpus', folder, '--name', 'mixed')
    assert done.returncode == 0, done.stderr
    assert done.stderr.endswith(f'\nskipped 2 bad documents in folder {folder}:\n  empty.txt: empty text\n'
                                '  old/scan.txt: not UTF-8 text (invalid start byte at byte 0)\n'
                                'skipped 3 files of types not read: .json (2), .rst (1)\n'), done.stderr
    assert manifest_of(home, 'mixed')['corpus']['skipped'] == {
        'source': str(folder), 'unread': {'.json': 2, '.rst': 1},
        'bad': [{'file': 'empty.txt', 'reason': 'empty text'},
                {'file': 'old/scan.txt', 'reason': 'not UTF-8 text (invalid start byte at byte 0)'}]}
    assert ask(home, 'mixed', 'What is kombucha?')['citations'][0]['passage_id'] == 'good.txt'
    done = run(home, 'voicerag-build', '--corpus', folder, '--name', 'strict', '--strict')
    assert (done.returncode == 2
            and done.stderr == f"voicerag: --corpus: empty text (file {folder/'empty.txt'})\n"), done.stderr
    assert not (home/'indexes'/'strict').exists()

def test_default_name_refused_and_rebuild_replaces(home, docs, tmp_path):
    before = default_state(home)
    refused = run(home, 'voicerag-build', '--corpus', docs, '--name', 'default')
    assert refused.returncode == 2 and "the index 'default' is the vendored corpus" in refused.stderr, refused.stderr
    other = tmp_path/'other'
    other.mkdir()
    (other/'kombucha.txt').write_text('Kombucha is fermented sweet tea.\n', encoding='utf-8')
    assert run(home, 'voicerag-build', '--corpus', other, '--name', 'mine').returncode == 0
    assert ask(home, 'mine', 'What is kombucha?')['citations'][0]['passage_id'] == 'kombucha.txt'
    manifest = json.loads((home/'indexes'/'mine'/'manifest.json').read_text(encoding='utf-8'))
    assert manifest['counts']['documents'] == 1                                             # the old documents are gone
    assert default_state(home) == before

def test_other_errors_are_one_line(home, docs, tmp_path):
    (tmp_path/'notes.xlsx').write_bytes(b'PK')
    (tmp_path/'empty.md').write_text('\n\n', encoding='utf-8')
    for source, message in [(tmp_path/'missing.csv', f"file {tmp_path/'missing.csv'} not found"),
                            (f'{tmp_path}/docs/', f'folder {tmp_path}/docs/ not found'),
                            (tmp_path/'notes.xlsx', 'unknown format'), (tmp_path/'empty.md', 'empty text')]:
        done = run(home, 'voicerag-build', '--corpus', source, '--name', 'bad')
        assert (done.returncode == 2 and done.stderr.startswith(f'voicerag: --corpus: {message}')
                and done.stderr.count('\n') == 1), done.stderr
        assert str(source) in done.stderr

def test_folder_with_nothing_readable_is_an_error(home, docs, tmp_path):
    broken = tmp_path/'broken'
    broken.mkdir()
    (broken/'cut.pdf').write_bytes((docs/'boston.pdf').read_bytes()[:300])
    (broken/'notes.rst').write_text('Tea\n===\n', encoding='utf-8')
    done = run(home, 'voicerag-build', '--corpus', broken, '--name', 'bad')
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and lines[:3] == [f'voicerag: --corpus: nothing to index in folder {broken}: every '
                                                  f'document in it was bad',
                                                  f'skipped 1 bad document in folder {broken}:', lines[2]], done.stderr
    assert (lines[2].startswith('  cut.pdf: unreadable PDF: ')
            and lines[3:] == ['skipped 1 file of a type not read: .rst (1)']), done.stderr
    assert not (home/'indexes'/'bad').exists()

def passages(home:Path, name:str) -> dict:
    "The stored text of each passage of index `name`, by id."
    lines = (home/'indexes'/name/'passages.jsonl').read_text(encoding='utf-8').splitlines()
    return {row['id']: row['text'] for row in map(json.loads, lines)}

def test_unclosed_quote_stops_the_build(home, tmp_path):
    before = default_state(home)
    table = tmp_path/'owls.csv'
    table.write_text('id,text\nb1,"unterminated quote about owls\nb2,fine row\n', encoding='utf-8')
    done = run(home, 'voicerag-build', '--corpus', table, '--name', 'owls')
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f'voicerag: --corpus: unterminated quote: the quoted cell that opens here is never closed, '
                           f'so the 1 line after it would be read into it (file {table}, row 2, field text)\n')
    table.write_text("id,text\nb1,\"owls\nb2,fine row\nb3,5'11\"\n", encoding='utf-8')          # closed, but rows later
    done = run(home, 'voicerag-build', '--corpus', table, '--name', 'owls')
    assert (done.returncode == 2
            and "runs on into line 3, which reads as a row of its own ('b2,fine row')" in done.stderr), done.stderr
    assert done.stderr.endswith(f'(file {table}, row 2, field text)\n')
    assert not (home/'indexes'/'owls').exists() and default_state(home) == before
    table.write_text('id,text\nb1,"Owls hunt at night.\nHowever, barn owls also hunt at dusk."\nb2,Bats hunt insects '
                     'in the dark.\n', encoding='utf-8')                                   # a cell that does span lines
    done = run(home, 'voicerag-build', '--corpus', table, '--name', 'owls')
    assert done.returncode == 0, done.stderr
    assert passages(home, 'owls') == {'b1': 'Owls hunt at night. However, barn owls also hunt at dusk.',
                                      'b2': 'Bats hunt insects in the dark.'}

def test_errors_name_the_users_columns(home, tmp_path):
    rows = {'dupid': [{'pid': 'a1', 'body': 'Owls hunt at night.'}, {'pid': 'a1', 'body': 'Bats hunt insects.'}],
            'nulls': [{'pid': 'a1', 'body': 'Owls hunt at night.'}, {'pid': 'a2', 'body': None}]}
    for stem, objs in rows.items():
        (tmp_path/f'{stem}.jsonl').write_text(''.join(json.dumps(o) + '\n' for o in objs), encoding='utf-8')
    (tmp_path/'tab.jsonl').write_text('{"pid": "a1", "body": "Owls hunt at night."}\n{"pid": "a2", "body": '
                                      '"Bats\tmoths"}\n', encoding='utf-8')
    cases = [('dupid.jsonl', 'body', "passage id 'a1' occurs twice with different content (file {}, row 2, field pid)"),
             ('nulls.jsonl', 'body', 'empty text (null) (file {}, row 2, field body)'),
             ('dupid.jsonl', 'nosuch', "no text column 'nosuch': the keys of its first row are pid, body (file {})"),
             ('tab.jsonl', 'body', "bad JSON line: Invalid control character '\\t' at column 28 (file {}, row 2)")]
    for file, text_col, message in cases:
        done = run(home, 'voicerag-build', '--corpus', tmp_path/file, '--name', 'cols', '--id-col', 'pid',
                   '--text-col', text_col, '--lang', 'en', '--strict')
        assert (done.returncode == 2
                and done.stderr == f'voicerag: --corpus: {message.format(tmp_path/file)}\n'), done.stderr
    (tmp_path/'faq.csv').write_text('question_id,answer_text\nq1,Matcha is powdered green tea.\nq2,Chai is '
                                    'spiced tea.\n', encoding='utf-8')
    done = run(home, 'voicerag-build', '--corpus', tmp_path/'faq.csv', '--name', 'cols', '--text-col', 'answer')
    assert done.stderr == (f"voicerag: --corpus: no text column 'answer': its columns are question_id, answer_text "
                           f"(file {tmp_path/'faq.csv'})\n")
    assert not (home/'indexes'/'cols').exists()

def test_markup_and_boilerplate_are_not_indexed(home, tmp_path):
    site = tmp_path/'site'
    site.mkdir()
    (site/'sornfell.md').write_text('# Sornfell Island\n\nThe Sornfell causeway joins the island to the mainland. It '
                                    'is **14 kilometres long** and _very_ windy at high tide.\n\n## Research '
                                    'station\nThe Sornfell research station was built in 1961 by [Ilse '
                                    'Varga](https://example.org/varga).\n\n![The station](station.png)\n',
                                    encoding='utf-8')
    (site/'pellwick.html').write_text('<html><head><title>The Pellwick Bakery</title></head><body><header><a '
                                      'href="/">Pellwick</a></header><nav><a href="/">Home</a> | <a '
                                      'href="/about">About</a> | <a href="/contact">Contact</a></nav><main><h1>The '
                                      'Pellwick Bakery</h1><p>The Pellwick Bakery was opened in 1923 by Ada '
                                      'Pellwick.</p></main><footer>Copyright Pellwick, all rights '
                                      'reserved</footer></body></html>', encoding='utf-8')
    (site/'darjeeling.txt').write_text('Darjeeling Tea Gardens\n\nThe first experimental gardens were planted in 1841 '
                                       'by Archibald Campbell.\n', encoding='utf-8')
    done = run(home, 'voicerag-build', '--corpus', site, '--name', 'site')
    assert done.returncode == 0, done.stderr
    stored = passages(home, 'site')
    assert stored == {
        'darjeeling.txt': 'Darjeeling Tea Gardens. The first experimental gardens were planted in 1841 by '
                          'Archibald Campbell.',
        'pellwick.html': 'The Pellwick Bakery. The Pellwick Bakery was opened in 1923 by Ada Pellwick.',
        'sornfell.md': 'Sornfell Island. The Sornfell causeway joins the island to the mainland. It is 14 kilometres '
                       'long and very windy at high tide. Research station. The Sornfell research station was built in '
                       '1961 by Ilse Varga.'}
    for question, file, sentence in [('How many kilometres long is the causeway?', 'sornfell.md',
                                      'It is 14 kilometres long and very windy at high tide.'),
                                     ('Who built the Sornfell research station?', 'sornfell.md',
                                      'The Sornfell research station was built in 1961 by Ilse Varga.'),
                                     ('When was the Pellwick Bakery opened?', 'pellwick.html',
                                      'The Pellwick Bakery was opened in 1923 by Ada Pellwick.'),
                                     ('When were the first experimental gardens planted?', 'darjeeling.txt',
                                      'The first experimental gardens were planted in 1841 by Archibald Campbell.')]:
        result = ask(home, 'site', question)
        cited = result['citations'][0]
        assert cited['passage_id'] == file, (question, result)
        # a whole sentence, no heading glued on
        assert stored[file][cited['start']:cited['end']] == sentence, (question, result)
        assert result['answer'].startswith(sentence), (question, result)
