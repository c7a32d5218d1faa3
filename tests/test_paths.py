"""Paths from data stay inside their root; missing extras name the extra."""
from __future__ import annotations

import os

import pytest

from mmlbdata.core.extras import MissingExtraError, require
from mmlbdata.core.paths import UnsafePathError, is_inside, resolve_inside


def test_relative_name_resolves_under_root(tmp_path):
    (tmp_path / "val2017").mkdir()
    assert resolve_inside(tmp_path, "val2017/a.jpg") == (tmp_path / "val2017" / "a.jpg").resolve()
    assert resolve_inside(tmp_path, "val2017/../b.jpg") == (tmp_path / "b.jpg").resolve()


@pytest.mark.parametrize("name", ["../../../etc/passwd", "/etc/passwd", "a/../../x", "", "a\x00b"])
def test_escaping_names_are_refused(tmp_path, name):
    with pytest.raises(UnsafePathError):
        resolve_inside(tmp_path, name, what="file_name")
    assert not is_inside(tmp_path, name)


def test_symlink_leading_out_is_refused(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "link.jpg")
    with pytest.raises(UnsafePathError, match="link.jpg"):
        resolve_inside(root, "link.jpg")


def test_missing_module_names_the_extra():
    with pytest.raises(MissingExtraError, match=r"pip install 'mmlbdata\[eval\]'"):
        require("surely_not_installed_mod", "eval", "the score plot")
    assert require("json", "core", "json").dumps([]) == "[]"


def test_cli_prints_one_line_for_a_missing_extra(monkeypatch, capsys):
    from mmlbdata import cli

    def boom(args):
        raise MissingExtraError("matplotlib", "eval", "the score plot")

    parser = cli.make_parser()
    args = parser.parse_args(["list"])
    monkeypatch.setattr(cli, "make_parser", lambda: type("P", (), {"parse_args": lambda self, a: args})())
    args.func = boom
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mmlbdata[eval]" in err and "Traceback" not in err
