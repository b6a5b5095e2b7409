"""PythonGitLabClient against the fixture GitLab server (tests/support/fake_gitlab.py), over real HTTP."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest
from support.fake_gitlab import GROUP, PROJECT, TOKEN, FakeGitLab

from graphmem.adapters import gitlab_answer_bounds
from graphmem.adapters.gitlab_api import PythonGitLabClient
from graphmem.adapters.gitlab_transport import MAX_INLINE_WAIT_S, PER_PAGE, USER_AGENT
from graphmem.core.gitlab import MAX_CHANGED_FILES, MAX_DESCRIPTION_CHARS, ChangedFile, IssueRefData, Person
from graphmem.errors import (
    ConfigError,
    GitLabAuthError,
    GitLabError,
    GitLabForbiddenError,
    GitLabNotFoundError,
    GitLabRateLimitedError,
    GitLabUnavailableError,
)

MR12 = f"/projects/{PROJECT}/merge_requests/12"
ALICE = Person("alice", "Alice Martin", "https://gitlab.example.com/alice")
BOB = Person("bob", "Bob Chen", "https://gitlab.example.com/bob")
CAROL = Person("carol", "Carol Diaz", "https://gitlab.example.com/carol")


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_client(gitlab: FakeGitLab, sleeps: list[float], clock: Clock) -> Callable[..., PythonGitLabClient]:
    def make(**options: object) -> PythonGitLabClient:
        settings: dict[str, object] = {
            "timeout_s": 2.0,
            "max_retries": 2,
            "cache_ttl_s": 60.0,
            "clock": clock,
            "sleep": sleeps.append,
        }
        settings.update(options)
        url = str(settings.pop("url", gitlab.url))
        token = settings.pop("token", TOKEN)
        return PythonGitLabClient(url, token, **settings)  # type: ignore[arg-type]

    return make


@pytest.fixture
def client(make_client: Callable[..., PythonGitLabClient]) -> PythonGitLabClient:
    return make_client()


# -- what is read -------------------------------------------------------------------------------


def test_probe_names_the_version_and_the_tokens_user(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    probe = client.probe()
    assert (probe.url, probe.version, probe.username) == (gitlab.url, "17.5.2-ee", "alice")


def test_requests_carry_the_token_header_and_a_graphmem_user_agent(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    client.probe()
    assert gitlab.requests
    assert all(r.headers.get("PRIVATE-TOKEN") == TOKEN for r in gitlab.requests)
    assert all(r.headers.get("User-Agent") == USER_AGENT for r in gitlab.requests)
    assert USER_AGENT.startswith("graphmem/")


def test_merge_request_fields(client: PythonGitLabClient) -> None:
    mr = client.merge_request(PROJECT, 12)
    assert (mr.project, mr.iid, mr.state, mr.draft) == (PROJECT, 12, "merged", False)
    assert mr.title == "Refunds round half-even and keep a 1% fee"
    assert mr.author == ALICE
    assert mr.assignees == (ALICE,)
    assert mr.reviewers == (BOB, CAROL)
    assert mr.labels == ("backend", "payments")
    assert mr.milestone == "2024.06"
    assert (mr.source_branch, mr.target_branch) == ("fix/refund-rounding", "main")
    assert mr.merged_at == datetime(2024, 5, 16, 15, 2, 43, 907000, tzinfo=UTC)
    assert mr.created_at == datetime(2024, 5, 14, 9, 12, 3, 412000, tzinfo=UTC)
    assert mr.updated_at == datetime(2024, 5, 16, 15, 2, 44, 118000, tzinfo=UTC)
    assert mr.description.endswith("Closes #34")
    assert mr.web_url == "https://gitlab.example.com/acme/shop/backend/-/merge_requests/12"
    assert mr.closes == (IssueRefData(PROJECT, 34, "Refunds round to the wrong cent", "closed"),)


def test_a_draft_merge_request_says_so(client: PythonGitLabClient) -> None:
    mr = client.merge_request(PROJECT, 13)
    assert (mr.draft, mr.state, mr.merged_at, mr.milestone, mr.closes) == (True, "opened", None, None, ())


def test_changed_files_carry_paths_flags_and_new_file_line_ranges(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    mr = client.merge_request(PROJECT, 12)
    assert mr.changed_files == (
        ChangedFile("src/shop/refund.py", "src/shop/refund.py", ranges=((1, 5), (9, 17))),
        ChangedFile("src/shop/checkout.py", "src/shop/checkout.py", ranges=((1, 10),)),
        ChangedFile("tests/test_refund.py", "tests/test_refund.py", new_file=True, ranges=((1, 6),)),
        ChangedFile("docs/refunds.md", "docs/refund.md", renamed_file=True, ranges=((1, 3),)),
        ChangedFile("src/shop/legacy_refund.py", "src/shop/legacy_refund.py", deleted_file=True),
        ChangedFile("web/refund-icon.png", "web/refund-icon.png", new_file=True),
    )
    assert (mr.changed_files_total, mr.changed_files_total_exact) == (6, True)
    assert gitlab.count("/diffs") == 1
    assert gitlab.count("/changes") == 0


def test_without_the_diffs_route_the_changes_route_gives_the_same_files(
    make_client: Callable[..., PythonGitLabClient], gitlab: FakeGitLab
) -> None:
    from_diffs = make_client().merge_request(PROJECT, 12)
    gitlab.remove_route(f"{MR12}/diffs")
    from_changes = make_client().merge_request(PROJECT, 12)
    assert from_changes.changed_files == from_diffs.changed_files
    assert from_changes.changed_files_total == 6
    assert gitlab.count(f"{MR12}/changes") == 1


def test_a_long_description_is_cut_with_a_note(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    raw = gitlab.fixture(MR12)
    raw["description"] = "Long story. " * 1_000
    gitlab.set_route(MR12, raw)
    mr = client.merge_request(PROJECT, 12)
    assert len(mr.description) <= MAX_DESCRIPTION_CHARS
    assert "cut by graphmem" in mr.description


def test_half_of_an_emojis_pair_escaped_alone_is_read_as_a_replacement_character(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    raw = gitlab.fixture(MR12)
    # json.dumps escapes these as "\\ud83d": Python's json reads each back as a lone surrogate
    raw["title"] = "Fix the caf\ud83d menu"
    raw["description"] = "A pair \ud83d\ude00 stays whole; a low half \ude00 alone does not"
    raw["author"]["name"] = "Ren\udc00"
    gitlab.set_route(MR12, raw)

    mr = client.merge_request(PROJECT, 12)

    assert mr.title == "Fix the caf\ufffd menu" and mr.author is not None and mr.author.name == "Ren\ufffd"
    assert mr.description == "A pair \U0001f600 stays whole; a low half \ufffd alone does not"


def test_issue_fields_epic_and_related_merge_requests(client: PythonGitLabClient) -> None:
    issue = client.issue(PROJECT, 34)
    assert (issue.project, issue.iid, issue.state) == (PROJECT, 34, "closed")
    assert issue.title == "Refunds round to the wrong cent"
    assert issue.author == CAROL
    assert issue.assignees == (ALICE,)
    assert issue.labels == ("bug", "payments")
    assert issue.milestone == "2024.06"
    assert issue.created_at == datetime(2024, 5, 10, 11, 30, tzinfo=UTC)
    assert issue.closed_at == datetime(2024, 5, 16, 15, 2, 45, 101000, tzinfo=UTC)
    assert issue.description.startswith("A refund of 10.005")
    assert issue.web_url == "https://gitlab.example.com/acme/shop/backend/-/issues/34"
    assert issue.epic == (GROUP, 5)
    assert issue.related_merge_requests == ((PROJECT, 12),)


def test_an_epic_known_by_group_id_resolves_the_group_path_once(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    for iid in (34, 35):
        route = f"/projects/{PROJECT}/issues/{iid}"
        raw = gitlab.fixture(route)
        del raw["epic"]["url"]
        gitlab.set_route(route, raw)
    assert client.issue(PROJECT, 34).epic == (GROUP, 5)
    assert client.issue(PROJECT, 35).epic == (GROUP, 5)
    assert gitlab.count(f"/groups/{GROUP}") == 1


def test_an_epic_known_only_by_iid_is_taken_in_the_projects_group(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    route = f"/projects/{PROJECT}/issues/34"
    raw = gitlab.fixture(route)
    raw["epic"] = None
    gitlab.set_route(route, raw)
    assert client.issue(PROJECT, 34).epic == (GROUP, 5)


def test_an_issue_without_epic_or_milestone(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    route = f"/projects/{PROJECT}/issues/35"
    raw = gitlab.fixture(route)
    raw.update(epic=None, epic_iid=None)
    gitlab.set_route(route, raw)
    issue = client.issue(PROJECT, 35)
    assert (issue.epic, issue.milestone, issue.assignees) == (None, None, ())
    assert issue.related_merge_requests == ((PROJECT, 13),)


def test_epic_fields_parent_and_children(client: PythonGitLabClient) -> None:
    epic = client.epic(GROUP, 5)
    assert (epic.group, epic.iid, epic.state) == (GROUP, 5, "opened")
    assert epic.title == "Refunds without surprises"
    assert epic.author == CAROL
    assert epic.labels == ("payments", "epic::refunds")
    assert epic.created_at == datetime(2024, 5, 2, 12, 0, tzinfo=UTC)
    assert epic.description.startswith("Refund amounts")
    assert epic.web_url == "https://gitlab.example.com/groups/acme/shop/-/epics/5"
    assert epic.parent == ("acme", 2)
    assert [(i.project, i.iid, i.state) for i in epic.child_issues] == [
        (PROJECT, 34, "closed"),
        (PROJECT, 35, "opened"),
    ]
    assert epic.child_epics == ((GROUP, 6),)


def test_a_child_epics_parent_in_the_same_group(client: PythonGitLabClient) -> None:
    epic = client.epic(GROUP, 6)
    assert (epic.parent, epic.child_issues, epic.child_epics) == ((GROUP, 5), (), ())


def test_without_multi_level_epics_an_epic_has_no_child_epics(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    gitlab.fail(403, route="epics/5/epics")
    epic = client.epic(GROUP, 5)
    assert epic.child_epics == ()
    assert len(epic.child_issues) == 2


def test_numeric_project_and_group_ids_work_as_paths(client: PythonGitLabClient) -> None:
    assert client.merge_request("42", 12).title.startswith("Refunds")
    assert client.epic("7", 5).title == "Refunds without surprises"


# -- bounds and pagination ----------------------------------------------------------------------


def test_a_huge_merge_request_keeps_the_bound_and_counts_every_file(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    gitlab.add_huge_merge_request(99, 2_500)
    mr = client.merge_request(PROJECT, 99)
    assert len(mr.changed_files) == MAX_CHANGED_FILES
    assert mr.changed_files[0].new_path == "src/gen/module_00000.py"
    assert mr.changed_files[-1].new_path == f"src/gen/module_{MAX_CHANGED_FILES - 1:05d}.py"
    assert mr.changed_files[0].ranges == ((1, 3),)
    assert (mr.changed_files_total, mr.changed_files_total_exact) == (2_500, True)
    # pages stop at the bound: 500 of 2,500 files at 100 a page
    diff_requests = [r for r in gitlab.requests if r.route.endswith("/diffs")]
    assert len(diff_requests) == MAX_CHANGED_FILES // PER_PAGE
    assert {r.query.get("per_page") for r in diff_requests} == {str(PER_PAGE)}


def test_without_a_stated_total_the_count_is_a_marked_lower_bound(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    gitlab.add_huge_merge_request(99, 2_500)
    gitlab.send_totals = False
    mr = client.merge_request(PROJECT, 99)
    assert len(mr.changed_files) == MAX_CHANGED_FILES
    assert mr.changed_files_total == 1_000  # GitLab's changes_count: "1000+"
    assert mr.changed_files_total_exact is False
    assert gitlab.count("/diffs") <= MAX_CHANGED_FILES // PER_PAGE + 1


def test_a_changes_list_that_overflowed_is_a_marked_lower_bound(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    gitlab.add_huge_merge_request(99, 2_500)
    gitlab.remove_route(f"/projects/{PROJECT}/merge_requests/99/diffs")
    mr = client.merge_request(PROJECT, 99)
    assert len(mr.changed_files) == MAX_CHANGED_FILES
    assert (mr.changed_files_total, mr.changed_files_total_exact) == (1_000, False)


def test_a_small_list_without_totals_is_exact(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    gitlab.send_totals = False
    mr = client.merge_request(PROJECT, 12)
    assert (mr.changed_files_total, mr.changed_files_total_exact) == (6, True)


@pytest.mark.parametrize("stated", ["lots", "", "-3", "9" * 400])
def test_a_total_that_is_no_count_is_counted_instead(
    client: PythonGitLabClient, gitlab: FakeGitLab, stated: str
) -> None:
    gitlab.total_header = stated
    mr = client.merge_request(PROJECT, 12)
    assert (len(mr.changed_files), mr.changed_files_total, mr.changed_files_total_exact) == (6, 6, True)


@pytest.fixture
def elsewhere() -> Iterator[FakeGitLab]:
    """Another server, as a page's link or a redirect may name: it must never be asked."""
    with FakeGitLab() as server:
        yield server


def test_a_page_link_to_another_address_is_not_followed(
    client: PythonGitLabClient, gitlab: FakeGitLab, elsewhere: FakeGitLab
) -> None:
    gitlab.add_huge_merge_request(99, 300)  # three pages of diffs
    gitlab.link_base = f"http://127.0.0.1:{elsewhere.port}/steal"  # no "/api": followed as written
    with pytest.raises(GitLabUnavailableError, match="another address"):
        client.merge_request(PROJECT, 99)
    assert elsewhere.requests == []
    assert gitlab.count("/diffs") == 1


def test_a_redirect_to_another_address_is_not_followed(
    client: PythonGitLabClient, gitlab: FakeGitLab, elsewhere: FakeGitLab
) -> None:
    gitlab.redirect_to = f"http://127.0.0.1:{elsewhere.port}"
    with pytest.raises(GitLabUnavailableError, match="another address"):
        client.merge_request(PROJECT, 12)
    assert elsewhere.requests == []


def test_child_issues_are_read_across_pages(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    route = f"/groups/{GROUP}/epics/5/issues"
    template = gitlab.fixture(route)[0]
    children = []
    for iid in range(1, 251):
        child = dict(template, iid=iid, title=f"Child {iid}")
        child["references"] = {"short": f"#{iid}", "relative": f"#{iid}", "full": f"{PROJECT}#{iid}"}
        children.append(child)
    gitlab.set_route(route, children)
    epic = client.epic(GROUP, 5)
    assert [i.iid for i in epic.child_issues] == list(range(1, 251))
    assert gitlab.count(route) == 3


# -- faults -------------------------------------------------------------------------------------


def test_a_wrong_token_is_an_auth_error_at_once(
    make_client: Callable[..., PythonGitLabClient], gitlab: FakeGitLab, sleeps: list[float]
) -> None:
    client = make_client(token="glpat-wrong-token-value")
    with pytest.raises(GitLabAuthError, match="GITLAB_TOKEN") as caught:
        client.merge_request(PROJECT, 12)
    assert "glpat-wrong-token-value" not in str(caught.value)
    assert gitlab.count() == 1
    assert sleeps == []


def test_no_token_is_an_auth_error_that_asks_for_one(make_client: Callable[..., PythonGitLabClient]) -> None:
    with pytest.raises(GitLabAuthError, match="needs a token"):
        make_client(token=None).issue(PROJECT, 34)


def test_probe_with_a_wrong_token_is_an_auth_error(make_client: Callable[..., PythonGitLabClient]) -> None:
    with pytest.raises(GitLabAuthError):
        make_client(token="nope").probe()


@pytest.mark.parametrize(
    ("status", "error"), [(403, GitLabForbiddenError), (404, GitLabNotFoundError), (401, GitLabAuthError)]
)
def test_a_refusal_is_mapped_without_retries(
    client: PythonGitLabClient, gitlab: FakeGitLab, sleeps: list[float], status: int, error: type[GitLabError]
) -> None:
    gitlab.fail(status, route="merge_requests/12")
    with pytest.raises(error):
        client.merge_request(PROJECT, 12)
    assert gitlab.count() == 1
    assert sleeps == []


def test_a_project_the_token_cannot_see_is_not_found(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    with pytest.raises(GitLabNotFoundError, match=r"acme/secret/vault!3"):
        client.merge_request("acme/secret/vault", 3)
    assert gitlab.count() == 1


def test_a_short_retry_after_is_waited_then_the_call_succeeds(
    client: PythonGitLabClient, gitlab: FakeGitLab, sleeps: list[float]
) -> None:
    gitlab.fail(429, route="merge_requests/12", times=1, retry_after_s=2)
    mr = client.merge_request(PROJECT, 12)
    assert mr.iid == 12
    assert sleeps == [2.0]
    assert gitlab.count(MR12) == 4  # the 429, the retry, /diffs, /closes_issues


def test_a_long_retry_after_is_raised_for_the_queue_to_wait(
    client: PythonGitLabClient, gitlab: FakeGitLab, sleeps: list[float]
) -> None:
    gitlab.fail(429, retry_after_s=120)
    with pytest.raises(GitLabRateLimitedError, match="120 s") as caught:
        client.issue(PROJECT, 34)
    assert caught.value.retry_after_s == 120.0
    assert gitlab.count() == 1
    assert sleeps == []
    assert MAX_INLINE_WAIT_S < 120


def test_rate_limiting_that_persists_stops_after_the_retries(
    client: PythonGitLabClient, gitlab: FakeGitLab, sleeps: list[float]
) -> None:
    gitlab.fail(429, retry_after_s=1)
    with pytest.raises(GitLabRateLimitedError) as caught:
        client.issue(PROJECT, 34)
    assert caught.value.retry_after_s == 1.0
    assert gitlab.count() == 3
    assert sleeps == [1.0, 1.0]


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_back_off_a_bounded_number_of_times(
    client: PythonGitLabClient, gitlab: FakeGitLab, sleeps: list[float], status: int
) -> None:
    gitlab.fail(status)
    with pytest.raises(GitLabUnavailableError, match=f"last: {status}"):
        client.epic(GROUP, 5)
    assert gitlab.count() == 3  # one try and max_retries=2 retries
    assert sleeps == [0.5, 1.0]


def test_a_passing_server_error_is_retried_away(
    client: PythonGitLabClient, gitlab: FakeGitLab, sleeps: list[float]
) -> None:
    gitlab.fail(502, route="epics/5/issues", times=1)
    epic = client.epic(GROUP, 5)
    assert len(epic.child_issues) == 2
    assert sleeps == [0.5]


def test_a_failing_later_page_is_retried_in_place(
    client: PythonGitLabClient, gitlab: FakeGitLab, sleeps: list[float]
) -> None:
    gitlab.add_huge_merge_request(99, 300)
    gitlab.fail(503, route="/diffs", page=2, times=1)
    mr = client.merge_request(PROJECT, 99)
    assert len(mr.changed_files) == 300
    assert [r.query.get("page", "1") for r in gitlab.requests if r.route.endswith("/diffs")] == [
        "1",
        "2",
        "2",
        "3",
    ]
    assert sleeps == [0.5]


def test_a_slow_server_times_out_after_bounded_retries(
    make_client: Callable[..., PythonGitLabClient], gitlab: FakeGitLab, sleeps: list[float]
) -> None:
    gitlab.fail("slow", delay_s=1.5)
    client = make_client(timeout_s=0.05, max_retries=1)
    with pytest.raises(GitLabUnavailableError, match=r"within 0.05 s"):
        client.issue(PROJECT, 34)
    assert gitlab.count() == 2
    assert sleeps == [0.5]


def test_malformed_json_is_unavailable_and_says_so(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    gitlab.fail("malformed", route="issues/34")
    with pytest.raises(GitLabUnavailableError, match="malformed JSON"):
        client.issue(PROJECT, 34)
    assert gitlab.count() == 1


def test_malformed_json_in_a_list_is_unavailable(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    gitlab.fail("malformed", route="/diffs")
    with pytest.raises(GitLabUnavailableError, match="malformed JSON"):
        client.merge_request(PROJECT, 12)


@pytest.mark.parametrize("page", [{"message": "200 OK"}, {}, 3, True])
def test_a_list_page_that_is_not_a_json_list_is_unavailable(
    client: PythonGitLabClient, gitlab: FakeGitLab, page: object
) -> None:
    gitlab.set_route(f"{MR12}/diffs", page)  # a non-list is served as it is, 200, unpaginated
    with pytest.raises(GitLabUnavailableError, match="not a JSON list"):
        client.merge_request(PROJECT, 12)


def test_an_answer_past_the_longest_read_is_unavailable(
    make_client: Callable[..., PythonGitLabClient], gitlab: FakeGitLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitlab_answer_bounds, "MAX_ANSWER_BYTES", 200_000)
    client = make_client(cache_ttl_s=0)
    raw = gitlab.fixture(MR12)
    gitlab.set_route(MR12, dict(raw, description="x" * 190_000))
    assert client.merge_request(PROJECT, 12).iid == 12  # under the bound: read whole
    gitlab.set_route(MR12, dict(raw, description="x" * 210_000))
    with pytest.raises(GitLabUnavailableError, match=r"more than 0\.191 MiB"):
        client.merge_request(PROJECT, 12)


def test_an_answer_trickled_past_the_longest_wait_is_unavailable(
    make_client: Callable[..., PythonGitLabClient], gitlab: FakeGitLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitlab_answer_bounds, "MAX_ANSWER_S", 0.3)
    client = make_client(cache_ttl_s=0)
    # each byte well within the timeout, the whole answer not within MAX_ANSWER_S
    gitlab.fail("trickle", route="merge_requests/12", times=1, delay_s=0.05)
    with pytest.raises(GitLabUnavailableError, match=r"took over 0\.3 s to send one answer"):
        client.merge_request(PROJECT, 12)
    assert client.merge_request(PROJECT, 12).iid == 12  # the next answer, whole, on a new connection


def test_a_body_that_stops_arriving_is_a_timeout_tried_again(
    make_client: Callable[..., PythonGitLabClient], gitlab: FakeGitLab, sleeps: list[float]
) -> None:
    client = make_client(timeout_s=0.2, cache_ttl_s=0)
    gitlab.fail("trickle", route="merge_requests/12", delay_s=1.0)  # headers, then a byte a second
    with pytest.raises(GitLabUnavailableError, match=r"did not answer .* within 0\.2 s \(3 attempts\)"):
        client.merge_request(PROJECT, 12)
    assert gitlab.count("merge_requests/12") == 3 and len(sleeps) == 2


def test_an_html_page_instead_of_the_api_is_unavailable(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    gitlab.fail("html", route="merge_requests/12")
    with pytest.raises(GitLabUnavailableError, match="text/html"):
        client.merge_request(PROJECT, 12)


def test_an_answer_of_the_wrong_shape_is_unavailable(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    gitlab.set_route(MR12, {"message": "not a merge request"})
    with pytest.raises(GitLabUnavailableError, match="unexpected shape"):
        client.merge_request(PROJECT, 12)


def test_offline_is_unavailable_at_once(
    client: PythonGitLabClient, gitlab: FakeGitLab, sleeps: list[float]
) -> None:
    gitlab.stop()
    with pytest.raises(GitLabUnavailableError, match="Cannot connect"):
        client.probe()
    assert sleeps == []


def test_bad_input_is_refused_before_any_request(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    with pytest.raises(GitLabNotFoundError, match="iid"):
        client.merge_request(PROJECT, 0)
    with pytest.raises(GitLabNotFoundError, match="project path"):
        client.issue("", 3)
    with pytest.raises(GitLabNotFoundError, match="group path"):
        client.epic("acme shop", 3)
    assert gitlab.count() == 0


@pytest.mark.parametrize("url", ["gitlab.example.com", "ftp://gitlab.example.com", ""])
def test_a_url_that_is_not_http_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match=r"\[gitlab\] url"):
        PythonGitLabClient(url, TOKEN)


# -- answers of a hostile shape -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("iid", float("inf")),  # sent as Infinity, which Python's JSON reads
        ("created_at", "0001-01-01T00:00:00+14:00"),  # before the first UTC date
        ("merged_at", "9999-12-31T23:59:59-14:00"),  # after the last
    ],
)
def test_a_number_or_time_out_of_range_is_an_answer_of_the_wrong_shape(
    client: PythonGitLabClient, gitlab: FakeGitLab, field: str, value: object
) -> None:
    gitlab.set_route(MR12, dict(gitlab.fixture(MR12), **{field: value}))
    with pytest.raises(GitLabUnavailableError, match="unexpected shape"):
        client.merge_request(PROJECT, 12)


@pytest.mark.parametrize(
    "count", ["²", "9" * 4_400, "9" * 20], ids=["superscript", "4400-digits", "past-int64"]
)
def test_a_changes_count_that_is_no_count_is_not_the_total(
    client: PythonGitLabClient, gitlab: FakeGitLab, count: str
) -> None:
    gitlab.add_huge_merge_request(99, 2_500)
    gitlab.send_totals = False
    route = f"/projects/{PROJECT}/merge_requests/99"
    gitlab.set_route(route, dict(gitlab.fixture(route), changes_count=count))
    mr = client.merge_request(PROJECT, 99)
    assert (mr.changed_files_total, mr.changed_files_total_exact) == (MAX_CHANGED_FILES, False)


@pytest.mark.parametrize("description", [["a list"], {"an": "object"}])
def test_a_description_that_is_no_text_is_read_as_none(
    client: PythonGitLabClient, gitlab: FakeGitLab, description: object
) -> None:
    gitlab.set_route(MR12, dict(gitlab.fixture(MR12), description=description))
    assert client.merge_request(PROJECT, 12).description == ""


@pytest.mark.parametrize("path", [5, None, ["src/a.py"]])
def test_a_changed_file_whose_path_is_no_text_is_an_answer_of_the_wrong_shape(
    client: PythonGitLabClient, gitlab: FakeGitLab, path: object
) -> None:
    diffs = gitlab.fixture(f"{MR12}/diffs")
    diffs[0]["new_path"] = path
    gitlab.set_route(f"{MR12}/diffs", diffs)
    with pytest.raises(GitLabUnavailableError, match="unexpected shape"):
        client.merge_request(PROJECT, 12)


def test_related_merge_requests_without_references_are_named_by_their_web_url(
    client: PythonGitLabClient, gitlab: FakeGitLab
) -> None:
    route = f"/projects/{PROJECT}/issues/34/related_merge_requests"
    related = [{k: v for k, v in m.items() if k not in ("references", "iid")} for m in gitlab.fixture(route)]
    gitlab.set_route(route, related)
    assert client.issue(PROJECT, 34).related_merge_requests == ((PROJECT, 12),)


def test_a_long_epic_url_is_read_at_once(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    route = f"/projects/{PROJECT}/issues/34"
    raw = gitlab.fixture(route)
    raw["epic"]["url"] = "/groups/" * 8_000  # searched from each "/groups/", it took 20 s
    gitlab.set_route(route, raw)
    started = time.monotonic()
    assert client.issue(PROJECT, 34).epic == (GROUP, 5)  # from epic.group_id
    assert time.monotonic() - started < 1.0


def test_a_long_merge_request_web_url_is_read_at_once(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    route = f"/projects/{PROJECT}/issues/34/related_merge_requests"
    related = gitlab.fixture(route)
    del related[0]["references"]
    related[0]["web_url"] = "https://gitlab.example.com" + "/a" * 16_000  # it took 4 s a merge request
    gitlab.set_route(route, related)
    started = time.monotonic()
    assert client.issue(PROJECT, 34).related_merge_requests == ((PROJECT, 12),)  # from iid
    assert time.monotonic() - started < 1.0


# -- cache ----------------------------------------------------------------------------------------


def test_a_repeated_call_within_the_ttl_does_not_reach_the_server(
    client: PythonGitLabClient, gitlab: FakeGitLab, clock: Clock
) -> None:
    first = client.merge_request(PROJECT, 12)
    sent = gitlab.count()
    clock.now += 59
    assert client.merge_request(PROJECT, 12) == first
    assert gitlab.count() == sent


def test_after_the_ttl_the_server_is_asked_again(
    client: PythonGitLabClient, gitlab: FakeGitLab, clock: Clock
) -> None:
    client.issue(PROJECT, 34)
    sent = gitlab.count()
    route = f"/projects/{PROJECT}/issues/34"
    raw = gitlab.fixture(route)
    raw["state"] = "opened"
    gitlab.set_route(route, raw)
    clock.now += 61
    assert client.issue(PROJECT, 34).state == "opened"
    assert gitlab.count() == 2 * sent


def test_clear_cache_forgets_answers(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    client.epic(GROUP, 6)
    sent = gitlab.count()
    client.clear_cache()
    client.epic(GROUP, 6)
    assert gitlab.count() == 2 * sent


def test_a_zero_ttl_caches_nothing(
    make_client: Callable[..., PythonGitLabClient], gitlab: FakeGitLab
) -> None:
    client = make_client(cache_ttl_s=0)
    client.issue(PROJECT, 34)
    sent = gitlab.count()
    client.issue(PROJECT, 34)
    assert gitlab.count() == 2 * sent


def test_errors_are_not_cached(client: PythonGitLabClient, gitlab: FakeGitLab) -> None:
    gitlab.fail(404, route="issues/34", times=1)
    with pytest.raises(GitLabNotFoundError):
        client.issue(PROJECT, 34)
    assert client.issue(PROJECT, 34).iid == 34


# -- the token ------------------------------------------------------------------------------------


def test_the_token_is_in_no_message_log_repr_or_result(
    make_client: Callable[..., PythonGitLabClient], gitlab: FakeGitLab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = make_client(max_retries=1)
    seen = [repr(client), repr(client.merge_request(PROJECT, 12)), repr(client.issue(PROJECT, 34))]
    seen.append(repr(client.epic(GROUP, 5)))
    seen.append(repr(client.probe()))
    for fault in (401, 403, 404, 500, "malformed"):
        gitlab.clear_faults()
        gitlab.fail(fault, retry_after_s=1)
        client.clear_cache()
        with pytest.raises(GitLabError) as caught:
            client.issue(PROJECT, 35)
        seen.append(str(caught.value))
    gitlab.clear_faults()
    gitlab.fail(429, retry_after_s=1)
    with pytest.raises(GitLabRateLimitedError) as limited:
        client.epic(GROUP, 6)
    seen.append(str(limited.value))
    gitlab.stop()
    with pytest.raises(GitLabUnavailableError) as offline:
        client.probe()
    seen.append(str(offline.value))
    seen.extend(record.getMessage() for record in caplog.records)
    assert any("retry 1 of 1" in text for text in seen)  # the logs were captured
    assert not [text for text in seen if TOKEN in text]


# -- self-managed -------------------------------------------------------------------------------


def test_a_self_managed_instance_under_a_path_prefix() -> None:
    with FakeGitLab(prefix="/gitlab") as gitlab:
        gitlab.add_huge_merge_request(99, 250)
        client = PythonGitLabClient(gitlab.url + "/", TOKEN, sleep=lambda s: None)
        assert client.url == gitlab.url
        assert client.probe().version == "17.5.2-ee"
        assert len(client.merge_request(PROJECT, 99).changed_files) == 250
        assert all(r.path.startswith("/gitlab/api/v4/") for r in gitlab.requests)
        assert gitlab.count("/diffs") == 3  # the Link header's pages kept the prefix
