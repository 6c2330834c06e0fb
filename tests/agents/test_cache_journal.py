"""The response cache's journal: replies a killed process had not committed are committed by the next one to open
the cache, never taken from a live process, and never put over a reply committed meanwhile."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import diskcache

from memevo.agents.llm.cache import CachedReply, CacheRequest, ResponseCache
from memevo.agents.llm.cache_journal import JOURNAL_FOLDER


def _request(index: int) -> CacheRequest:
    return CacheRequest(endpoint="e", model="m", messages=[{"role": "user", "content": f"q{index}"}], temperature=0.0,
                        max_tokens=1, response_format=None, sample_index=0)


def _reply(text: str) -> CachedReply:
    return CachedReply(text=text, model="m", prompt_tokens=1, completion_tokens=1, finish_reason="stop")


def _killed_after_putting(folder: Path, count: int, text: str = "answer") -> None:
    """A process that puts ``count`` replies, its writer waiting a minute, and is then killed (``kill -9``)."""
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from tests.agents.test_cache_journal import _reply, _request
        from memevo.agents.llm.cache import ResponseCache
        cache = ResponseCache(Path({str(folder)!r}), write_delay_s=60.0)
        for index in range({count}):
            cache.put(_request(index), _reply({text!r} + str(index)))
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    killed = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parents[2], capture_output=True)
    assert killed.returncode == -9, killed.stderr


def test_the_replies_of_a_killed_process_are_committed_by_the_next_to_open_the_cache(tmp_path: Path) -> None:
    _killed_after_putting(tmp_path, 30)
    assert len(list((tmp_path / JOURNAL_FOLDER).iterdir())) == 1
    reopened = ResponseCache(tmp_path)
    assert len(reopened) == 30 and reopened.get(_request(29)).text == "answer29"
    assert list((tmp_path / JOURNAL_FOLDER).iterdir()) == []
    reopened.close()


def test_a_committed_batch_leaves_no_journal_and_a_closed_cache_none(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, write_delay_s=60.0)
    cache.put(_request(0), _reply("a"))
    journals = list((tmp_path / JOURNAL_FOLDER).iterdir())
    assert len(journals) == 1 and journals[0].read_text().startswith(f"{_request(0).key}\t")
    cache.flush()
    assert list((tmp_path / JOURNAL_FOLDER).iterdir()) == []
    cache.put(_request(1), _reply("b"))
    cache.close()
    assert list((tmp_path / JOURNAL_FOLDER).iterdir()) == []


def test_a_live_process_keeps_its_journal_while_another_opens_the_cache(tmp_path: Path) -> None:
    """The lock, not the file's presence, tells a dead process's journal: a second cache on the folder (another
    open file, as another process has) leaves the first one's journal alone, and the first commits it itself."""
    first = ResponseCache(tmp_path, write_delay_s=60.0)
    first.put(_request(0), _reply("a"))
    second = ResponseCache(tmp_path)
    assert second.get(_request(0)) is None and len(list((tmp_path / JOURNAL_FOLDER).iterdir())) == 1
    first.close()
    assert second.get(_request(0)).text == "a"
    second.close()


def test_a_reply_committed_meanwhile_is_not_replaced_and_a_torn_line_is_skipped(tmp_path: Path) -> None:
    _killed_after_putting(tmp_path, 2, text="old")
    journal = next((tmp_path / JOURNAL_FOLDER).iterdir())
    with journal.open("a", encoding="utf-8") as torn:
        torn.write(f'{_request(2).key}\t{{"text": "cut')
    with diskcache.Cache(str(tmp_path)) as store:  # another process committed a reply for the same request
        store.set(_request(0).key, _reply("new").model_dump_json())
    reopened = ResponseCache(tmp_path)
    assert reopened.get(_request(0)).text == "new" and reopened.get(_request(1)).text == "old1"
    assert reopened.get(_request(2)) is None and len(reopened) == 2
    reopened.close()
