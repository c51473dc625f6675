"The committed package must be exactly what the notebooks export (the notebooks are the source)."
import shutil, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def _export_into(tmp: Path) -> Path:
    shutil.copy(ROOT/'settings.ini', tmp/'settings.ini')
    shutil.copytree(ROOT/'nbs', tmp/'nbs')
    (tmp/'voicerag').mkdir()
    nbdev_export = Path(sys.executable).parent/'nbdev_export'
    subprocess.run([str(nbdev_export)], cwd=tmp, check=True, capture_output=True)
    return tmp/'voicerag'

def _sources(package: Path) -> dict[str, str]:
    "Every .py file of `package`, subpackages included, by its path inside it."
    return {p.relative_to(package).as_posix(): p.read_text(encoding='utf-8') for p in package.rglob('*.py')}

def test_package_matches_notebooks(tmp_path):
    fresh, committed = _sources(_export_into(tmp_path)), _sources(ROOT/'voicerag')
    assert sorted(fresh) == sorted(committed), 'modules differ: run nbdev_export and commit voicerag/'
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f'{stale} out of date with the notebooks: run nbdev_export and commit voicerag/'
