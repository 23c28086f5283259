"""Markdown, figures and the report: :mod:`distpriv.experiments.chen_ohrimenko.render` (``distpriv reproduce chen-ohrimenko``, Chen & Ohrimenko Section 6).

Runs use tiny repetition counts and grids so the file stays well under a
minute; the statistical checks use tolerances derived from those sizes.
"""

from __future__ import annotations

import copy

import numpy as np

from distpriv.experiments import chen_ohrimenko as co


def _legend_texts(fig) -> list[str]:
    out = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    for ax in fig.axes:
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    return out


def test_figure2_panels_have_distinct_titles_legend_and_zero_marks(figure2_small):
    import matplotlib.pyplot as plt

    # reps=3, 300 model samples, ε ranges a [0.5, 10], b [1, 10], c [0.1, 10] (the run shared with
    # test_chen_ohrimenko_figures.py)
    res = figure2_small
    titles = [res["panels"][p]["title"] for p in "abc"]
    assert len(set(titles)) == 3 and [t[:3] for t in titles] == ["(a)", "(b)", "(c)"]
    assert "ε ∈ [1, 10]" in titles[1] and "ε ∈ [0.1, 10]" in titles[2]
    fig = co.build_figure(res)
    try:
        assert [ax.get_title() for ax in fig.axes] == titles
        legend = _legend_texts(fig)
        assert {"ExpM (L)", "DirM (L)", "ExpM (G)", "EigM (G)", "DauM (G)"} <= set(legend)
        zero_points = sum(
            int(np.sum(np.asarray(v) == 0)) for p in res["panels"].values() for s in p["series"].values()
            for k, v in s.items() if k.startswith("l2_error")
        )
        triangles = sum(len(line.get_xdata()) for ax in fig.axes for line in ax.get_lines()
                        if line.get_marker() == "v")
        assert zero_points > 0  # DauM (G) needs no noise at ε = 10 (Thm 5.4)
        assert triangles == zero_points  # every zero-error point is drawn on the bottom edge
        assert any("zero error" in t for t in legend)
        assert any(co.ZERO_NOTE in t.get_text() for t in fig.texts)
    finally:
        plt.close(fig)


def test_mark_zeros_draws_one_triangle_per_zero():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        assert not co.render._mark_zeros(ax, [1, 2, 3], [1.0, 0.5, 0.2], "k", True)
        assert co.render._mark_zeros(ax, [1, 2, 3], [1.0, 0.0, 0.0], "k", True)
        (line,) = ax.get_lines()
        assert list(line.get_xdata()) == [2.0, 3.0] and line.get_marker() == "v"
    finally:
        plt.close(fig)


def test_every_figure_has_title_panel_labels_and_legend(adult_ok, figure5_small):
    import matplotlib.pyplot as plt

    results = [
        co.figure3(reps=2, model_samples=300, delta_ps=(0.02, 0.3)),
        co.figure4(reps=2, model_samples=300, delta_ps=(0.1,), epsilons=(1.0,), n_shadow=20, n_test=20),
        copy.deepcopy(figure5_small),
    ]
    for res in results:
        fig = co.build_figure(res)
        try:
            assert fig._suptitle is not None and f"Figure {res['figure']}" in fig._suptitle.get_text()
            titles = [ax.get_title() for ax in fig.axes]
            assert len(set(titles)) == len(titles)
            assert [t[:3] for t in titles] == [f"({chr(ord('a') + i)})" for i in range(len(titles))]
            assert _legend_texts(fig)
        finally:
            plt.close(fig)


def test_write_report(figure5_small, table3_eps1, tmp_path):
    res = [copy.deepcopy(figure5_small), copy.deepcopy(table3_eps1)]
    files = co.write_chen_ohrimenko_report(res, tmp_path, {"figure 5": 0.1})
    names = {p.name for p in files}
    assert {"chen_ohrimenko_figure5.png", "chen_ohrimenko.md", "chen_ohrimenko.json"} <= names
    assert (tmp_path / "chen_ohrimenko_figure5.png").read_bytes()[:4] == b"\x89PNG"
    md = (tmp_path / "chen_ohrimenko.md").read_text()
    assert "Table 3" in md and "Figure 5" in md
