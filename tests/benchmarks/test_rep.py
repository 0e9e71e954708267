"""``python -m benchmarks.rep``: runs the chosen parts with the shared options."""

import sys
import types

import pytest

from benchmarks import rep


def test_rep_runs_the_parts_in_turn_with_the_shared_options(monkeypatch, tmp_path):
    calls = []
    parts = {}
    for name in ("C1", "C2", "C3"):
        module = types.ModuleType(f"fake_rep_{name}")
        module.main = lambda argv, shared=False, name=name: calls.append((name, list(argv), shared)) or 0
        monkeypatch.setitem(sys.modules, module.__name__, module)
        parts[name] = module.__name__
    monkeypatch.setattr(rep, "PARTS", parts)

    assert rep.main(["--parts", "C3,C1", "--quick", "--out-dir", str(tmp_path)]) == 0
    out = ["--out-dir", str(tmp_path), "--quick"]
    assert calls == [("C3", out, True), ("C1", out, True)]

    calls.clear()
    assert rep.main([]) == 0
    assert [c[0] for c in calls] == ["C1", "C2", "C3"] and calls[0][1] == ["--out-dir", "results/rep"]


def test_rep_method_specs_name_their_settings():
    """The specs the three parts share: REP's message update and objective follow the family."""
    assert rep.pep_spec(0.8, "full") == {"name": "PEP(u=0.8,full)", "family": "PEP", "u": 0.8, "cavity": "full"}
    assert rep.rep_spec(10.0)["name"] == "REP(c=10)"
    settings = {
        f: (s["message_update"], s["objective"]) for f in ("REP", "REP-B", "REP-exact") for s in [rep.rep_spec(1.0, f)]
    }
    assert settings == {"REP": ("A", "paper"), "REP-B": ("B", "paper"), "REP-exact": ("A", "exact")}


def test_rep_unknown_part_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        rep.main(["--parts", "C4"])
    assert exit_.value.code == 2
    assert "--parts must be among" in capsys.readouterr().err


def test_rep_parts_ignore_the_options_of_the_others(monkeypatch, capsys):
    """A part run by the runner logs and ignores another part's option; run on its own, it refuses it."""
    from benchmarks import rep_toy

    monkeypatch.setattr(rep, "rerender_report", lambda *args, **kwargs: 0)
    argv = ["--rerender", "--flip-rates", "0.1"]
    assert rep_toy.main(argv, shared=True) == 0
    assert "ignoring options meant for other parts: ['--flip-rates', '0.1']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        rep_toy.main(argv)


def test_rep_table_has_one_column_per_spec():
    """The tables of the three parts (columns of a header and a function of a row): header, rule, a line per row."""
    columns = [("method", lambda r: r["method"]), ("sweeps", lambda r: 2 * r["n"])]
    lines = rep.table(columns, [{"method": "EP", "n": 3}, {"method": "REP(c=1)", "n": 5}])
    assert lines == ["| method | sweeps |", "|---|---|", "| EP | 6 |", "| REP(c=1) | 10 |"]
