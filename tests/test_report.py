"""`dirtiness report` and `run --report`: the page opened in a real headless Chromium.

Chromium comes from Debian's packages (`.ci/run` and `make test` install it);
the path can be overridden with ``CHROMIUM``. Screenshots land in
``test-artifacts/`` (or ``$DIRTINESS_ARTIFACTS``).
"""

import os
from pathlib import Path

import pytest
from catalogs import prefix_of
from playwright.sync_api import sync_playwright
from seeds import HOSTILE

from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT
from dirtiness.readback.report.page import write_report
from dirtiness.readback.run_tables import RunTables

EXAMPLE = PROJECT_ROOT / "examples"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("DIRTINESS_ARTIFACTS", PROJECT_ROOT / "test-artifacts"))
# Chromium as the machine allows it: no sandbox as root, no background calls into a closed network.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    assert os.access(CHROMIUM, os.X_OK), f"{CHROMIUM}: Chromium is not installed (apt-get install chromium)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield launched
        launched.close()


class Visit:
    """A page opened from its file, with everything it logged, threw, asked for or popped up."""

    def __init__(self, browser, path: Path, height: int = 1000) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": height})
        self.problems, self.requests = [], []
        self.page.on("console", lambda m: self.problems.append(f"console.{m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"), d.dismiss()))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_load_state("load")

    def check_self_contained(self, path: Path) -> None:
        assert self.problems == []
        assert self.requests == [path.resolve().as_uri()]  # no CDN, no network: the file alone

    def keys(self, selector: str = "#dirty-graph g.node") -> list[str]:
        return self.page.eval_on_selector_all(selector, "nodes => nodes.map(n => n.getAttribute('data-key'))")


def dirty_keys(out: str, run_id: str) -> set[str]:
    from dirtiness.readback.fact_text import show_name

    rows = RunTables.open(out, run_id).rows("dirty_stmts")
    return {show_name((r["database"], r["schema"], r["name"])) for r in rows}


def test_run_report_matches_the_report_command(example_run, tmp_path, capsys):
    out, page = str(example_run.out), example_run.page
    again = tmp_path / "again.html"
    assert main(["report", "--out", out, "--html", str(again)]) == 0
    assert capsys.readouterr().out.strip() == f"report of run example (succeeded): {again}"
    assert again.read_bytes() == page.read_bytes()  # the same run gives the same page
    assert main(["report", "--out", str(tmp_path / "none"), "--html", str(again)]) == 2


def test_the_first_screen_says_what_the_deploy_does(example_run, expected, browser):
    """At 1400x900 the counts and the decisions are in view before any scrolling; every section is in the
    navigation, and how the run was computed comes last."""
    visit = Visit(browser, example_run.page, height=900)
    visit.check_self_contained(example_run.page)
    fold = 900
    table = visit.page.eval_on_selector("#decision-rows", "e => e.getBoundingClientRect().toJSON()")
    first_rows = visit.page.eval_on_selector_all(
        "#decision-rows tbody tr", "rows => rows.slice(0, 5).map(r => r.getBoundingClientRect().bottom)")
    assert table["top"] < fold and len(first_rows) == 5 and max(first_rows) < fold, (table, first_rows)
    assert visit.page.eval_on_selector("#overview", "e => e.getBoundingClientRect().bottom") < table["top"]
    graph = visit.page.eval_on_selector("#dirty-graph", "e => e.getBoundingClientRect().top")
    assert graph < fold - 100, graph  # and the dirty subgraph begins on it, below the decisions
    overview = visit.page.inner_text("#overview")
    counts = expected["counts"]
    assert f"{counts['dirty_stmts']} dirty objects" in overview.replace("\n", " ")
    assert f"{counts['ddl_plan']} operations (blue-green): " + ", ".join(
        f"{n} {p}" for p, n in expected["plan"].items()) in overview.replace("\n", " ")
    chips = visit.page.locator("#decisions .chip").all_inner_texts()
    assert chips[-1].split() == ["kept", str(sum(1 for d in expected["decisions"] if d.endswith(": kept")
                                                  and d.startswith("object")))], chips
    sections = visit.page.eval_on_selector_all("main > section", "s => s.map(e => e.id)")
    assert sections == ["overview", "decisions", "picture", "plan", "dirty", "computed"]
    linked = visit.page.eval_on_selector_all("nav a", "a => a.map(e => e.getAttribute('href'))")
    assert linked == [f"#{section}" for section in sections]
    computed = visit.page.inner_text("#computed")
    assert "fingerprint" in computed and "Seconds per stage" in computed and "Relations" in computed
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    visit.page.screenshot(path=str(ARTIFACTS / "report-first-screen.png"))  # the viewport only


def test_example_page_in_chromium(example_run, expected, browser):
    out, page = str(example_run.out), example_run.page
    dirty = expected["counts"]["dirty_stmts"]
    visit = Visit(browser, page)
    visit.check_self_contained(page)
    tables = RunTables.open(out)
    keys = visit.keys()
    assert len(keys) == len(set(keys)) == tables.run["dirty_stmts"] == dirty
    assert set(keys) == dirty_keys(out, "example")
    assert visit.page.get_attribute("#dirty-graph", "data-mode") == "objects"
    changed = visit.page.eval_on_selector_all("#dirty-graph g.node", "ns => ns.filter(n => n.querySelector"
                                              "('text.badge')).map(n => n.getAttribute('data-key'))")
    assert sorted(changed) == sorted(f"materialize.{k}" for k in (
        "public.flip_activities", "public.flipper_stats", "reporting.legacy_flippers"))
    deps = tables.rows("facts/depends_on")
    edges = {(f"{d['dep_database']}.{d['dep_schema']}.{d['dep_name']}", f"{d['database']}.{d['schema']}.{d['name']}")
             for d in deps}
    edges = {e for e in edges if set(e) <= set(keys)}
    assert visit.page.locator("#dirty-graph path.edge").count() == len(edges) > 0
    rounds = [r for r in tables.rows("run_rounds") if r["program"] == "rules"]  # the chart: the dirty rules
    assert visit.page.locator("#rounds-chart rect.bar").count() == len(rounds) == expected["rounds"] * 3
    assert visit.page.locator("#dirty-objects tbody tr").count() == dirty
    phases = visit.page.eval_on_selector_all("#plan summary", "s => s.map(e => e.textContent.split(':')[0])")
    assert phases == ["stage", "swap", "post-swap", "cleanup"]

    visit.page.fill("#search", "flippers")  # searchable: rows filtered, other nodes dimmed
    visible = visit.page.locator("#dirty-objects tbody tr:not(.hidden)")
    assert sorted(visible.all_inner_texts()) == sorted(t for t in visit.page.locator(
        "#dirty-objects tbody tr").all_inner_texts() if "flippers" in t.lower())
    assert 0 < visible.count() < dirty
    assert visit.page.locator("#dirty-graph g.node.dim").count() == dirty - len(
        [k for k in keys if "flippers" in k])
    visit.page.click('#dirty-graph g.node[data-key="materialize.public.flip_activities"]')
    assert visit.page.input_value("#search") == "materialize.public.flip_activities"
    shown = visit.page.locator("#dirty-objects tbody tr:not(.hidden)").all_inner_texts()
    assert len(shown) == 2  # the object, and flippers whose cause it is
    assert all("materialize.public.flip_activities" in row for row in shown)
    visit.page.fill("#search", "")

    decided = expected["decisions"]  # the decisions table, filterable by decision and by text
    assert visit.page.locator("#decision-rows tbody tr").count() == len(decided)
    visit.page.select_option("#decision-filter", "swapped")
    swapped = visit.page.locator("#decision-rows tbody tr:not(.hidden)").all_inner_texts()
    assert len(swapped) == len([d for d in decided if ": swapped" in d]) == 3
    assert visit.page.inner_text("#decisions-shown") == f"3 of {len(decided)} shown"
    visit.page.fill("#decision-search", "quickstart")
    (row,) = visit.page.locator("#decision-rows tbody tr:not(.hidden)").all_inner_texts()
    assert row.split("\t")[:4] == ["cluster", "quickstart", "swapped", "swap_cluster"]
    visit.page.select_option("#decision-filter", "")
    visit.page.fill("#decision-search", "")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report-example.png"
    visit.page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    visit.check_self_contained(page)


def test_large_runs_show_schemas(example_run, browser, tmp_path):
    out = str(example_run.out)
    page = tmp_path / "schemas.html"
    write_report(RunTables.open(out), str(page), {"max_graph_nodes": 3})
    visit = Visit(browser, page)
    visit.check_self_contained(page)
    assert visit.page.get_attribute("#dirty-graph", "data-mode") == "schemas"
    # public holds 3 dirty objects, reporting 2, api and sinks 1 each: the 3 largest, ties by name
    assert sorted(visit.keys()) == ["materialize.api", "materialize.public", "materialize.reporting"]
    assert "7 dirty objects: shown as the 4 schemas holding them (the 3 with the most dirty objects)" in \
        visit.page.inner_text("#picture")
    assert visit.page.locator("#dirty-objects tbody tr").count() == 7
    visit.page.screenshot(path=str(ARTIFACTS / "report-schemas.png"), full_page=True)


def test_hostile_names_stay_text(seeds, browser, tmp_path):
    out, scenarios = seeds
    page = tmp_path / "seeds.html"
    assert main(["report", "--out", out, "--html", str(page)]) == 0
    visit = Visit(browser, page)
    visit.check_self_contained(page)  # no alert() dialog, no error
    p = prefix_of(scenarios, "hostile")
    from dirtiness.readback.fact_text import show_name

    weird = show_name((p + HOSTILE[0], *HOSTILE[1:]))
    assert weird in visit.keys()
    assert visit.page.locator("script").count() == 1  # only the page's own
    assert weird in visit.page.inner_text("#dirty-objects")
    assert set(visit.keys()) == dirty_keys(out, "seeds")
