"""Installed, not only checked out: build the wheel, install it into a fresh virtual environment outside the checkout,
and run `voicerag-build` and `voicerag-ask` there with `VOICERAG_HOME` pointing at an empty folder.

It checks what only an installed package can get wrong: the vendored data, the demo notebook and the fitted models are
in the wheel, an index is written into the data home (never into site-packages), and nothing is read from the checkout.

The fresh environment sees the dependencies that `make install` put into this checkout's venv (one `.pth` line, not
processed as a site folder, so the checkout's editable install stays invisible) and gets the wheel itself without them;
`pip check` then proves every requirement the wheel declares is met. Resolving those requirements from PyPI is what
`make install` does in every CI run. The default index is copied from the checkout (built there when missing) rather
than built a second time; a small corpus is built by the installed `voicerag-build` into the data home."""
import json, os, shutil, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
QUESTION = 'How many points did the Panthers defense surrender?'

def run(args, cwd, env=None, timeout=900) -> subprocess.CompletedProcess:
    "Run `args`, failing the test with its output when it exits non-zero."
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (f'{" ".join(map(str, args))} exited '
                                  f'{done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}')
    return done

def clean_env(venv:Path, home:Path) -> dict:
    "This process's environment without anything pointing into the checkout or its venv, with `VOICERAG_HOME` = `home`."
    env = {k: v for k, v in os.environ.items() if not k.startswith(('VOICERAG_', 'PYTHON', 'VIRTUAL_ENV'))}
    path = [p for p in env.get('PATH', '').split(os.pathsep) if p and not p.startswith(str(ROOT))]
    return {**env, 'PATH': os.pathsep.join([str(venv/'bin'), *path]), 'VOICERAG_HOME': str(home)}

def site_packages(venv:Path) -> Path:
    return venv/'lib'/f'python{sys.version_info.major}.{sys.version_info.minor}'/'site-packages'

def default_index() -> Path:
    "The checkout's default index, built first when missing (the notebooks build it before pytest runs in CI)."
    from voicerag.core import Config
    from voicerag.retrieval.index import index_path
    from voicerag.serving.assembly import ensure_index
    config = Config.load()
    ensure_index(config)
    return index_path(config)

@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    "A fresh venv outside the checkout with the wheel built from it installed: (venv, home, work folder, environment)."
    tmp = tmp_path_factory.mktemp('wheel')
    run([sys.executable, '-m', 'pip', 'wheel', '--quiet', '--no-deps', '--no-build-isolation', '-w', tmp/'dist', ROOT],
        cwd=ROOT)
    wheel, = (tmp/'dist').glob('voicerag-*.whl')
    venv, home, work = tmp/'venv', tmp/'home', tmp/'work'
    work.mkdir()
    # pip, like every dependency, comes from the .pth
    run([sys.executable, '-m', 'venv', '--without-pip', venv], cwd=work)
    (site_packages(venv)/'checkout-dependencies.pth').write_text(str(site_packages(Path(sys.prefix))) + '\n')
    env = clean_env(venv, home)
    pip = [venv/'bin'/'python', '-m', 'pip', '--disable-pip-version-check']
    run([*pip, 'install', '--quiet', '--no-deps', '--force-reinstall', wheel], cwd=work, env=env)
    run([*pip, 'check'], cwd=work, env=env)
    shutil.copytree(default_index(), home/'indexes'/'default')
    return venv, home, work, env

def test_the_installed_package_reads_nothing_from_the_checkout(installed):
    venv, home, work, env = installed
    probe = ('import json, voicerag, voicerag.paths as p; print(json.dumps({"package": voicerag.__file__, '
             '"checkout": str(p.checkout_root()), "data": str(p.data_dir()), "home": str(p.home()), '
             '"demo": p.demo_notebook().is_file(), "models": sorted(f.name for f in '
             'p.package_file("models").iterdir())}))')
    where = json.loads(run([venv/'bin'/'python', '-c', probe], cwd=work, env=env).stdout)
    site = site_packages(venv)
    assert Path(where['package']).is_relative_to(site) and where['checkout'] == 'None', where
    assert Path(where['data']) == site/'voicerag'/'_data' and (Path(where['data'])/'xquad.en.json.gz').is_file(), where
    assert where['home'] == str(home) and where['demo'], where
    assert {'answerability.json', 'calibration.json', 'calibration_portable.json', 'reading.json', 'reading.npz',
            'rerank.json'} <= set(where['models']), where

def test_build_then_ask_in_the_data_home(installed, tmp_path):
    venv, home, work, env = installed
    corpus = tmp_path/'tea.jsonl'
    corpus.write_text('{"id": "d1", "text": "The first Darjeeling gardens were planted in 1841."}\n'
                      '{"id": "a1", "text": "Assam tea grows in the Brahmaputra valley."}\n')
    built = run([venv/'bin'/'voicerag-build', '--corpus', corpus, '--name', 'tea'], cwd=work, env=env)
    assert (home/'indexes'/'tea'/'manifest.json').is_file(), built.stdout
    site = site_packages(venv)
    assert (not (site/'indexes').exists()
            and not any(site.glob('voicerag/**/manifest.json'))), 'an index was written into site-packages'
    # the copied default index is found there
    kept = run([venv/'bin'/'voicerag-build', '--if-missing'], cwd=work, env=env)
    assert 'is there already' in kept.stdout, kept.stdout + kept.stderr
    result = json.loads(run([venv/'bin'/'voicerag-ask', '--json', QUESTION], cwd=work, env=env).stdout)
    assert result['state'] == 'answered' and result['answer'] == '308', result
    assert result['citations'][0]['passage_id'] == 'xquad/00/0@en', result
    # the shipped abstainer was found and applied
    assert result['meta']['abstainer']['rule'] == 'logistic', result['meta']
    assert 'rerank_top' in result['confidence'] and 'answerability' in result['confidence'], result['confidence']
