"""MemoryBench (LittleDinoC/MemoryBench; Hugging Face ``THUIR/MemoryBench``, not shipped) as an environment.

Each of its datasets (``Locomo-0``, ``DialSim-friends``, ``NFCats``, ``JRE-L``, ...) has a train and a test split of
records with ``test_idx``, ``input_prompt`` (or ``input_chat_messages``), ``dataset_name``, ``lang``, ``info``
(the gold material), ``dialog`` (a recorded conversation between the system and a simulated user who gives
feedback) and ``implicit_feedback`` (the user's like / dislike / copy / none per round); datasets built on a long
conversation also have a ``corpus`` (``corpus/<name>.jsonl``). Its off-policy protocol is followed: the corpus
sessions, then every training dialog with its implicit feedback, are replayed into the agent; then the agent
answers the test prompts. LoCoMo and DialSim datasets have no dialogs of their own (no vanilla baseline), only those
recorded with each baseline memory system (``dialog_mem0``, ``dialog_a_mem``, ...): the dialog field
(``dialog_field``, default ``dialog``) names the one to replay, and a dataset without it is an error listing the
ones it has. Scores use each dataset's own metric where memevo can compute it (LoCoMo's F1,
DialSim's accuracy with a judge for inexact replies, NFCats' 1-5 judge rating); the others need models or
tokenisers memevo does not run and are left out, each with a warning saying what it needs.

Accepted layout: the dataset snapshot (``dataset/<name>/{train,test}/*.arrow`` and ``corpus/``), one
``dataset/<name>`` folder, or Parquet shards as ``<name>/{train,test}/*.parquet``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator

from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.answer_scores import judge_answer
from memevo.environments.benchmarks.answer_scoring import (
    lettered_option,
    locomo_f1,
    multi_part_f1,
    porter_stemmer,
    says_not_mentioned,
)
from memevo.environments.benchmarks.base import BenchmarkEnvironment
from memevo.environments.benchmarks.files import existing_file, iter_json_records, iter_table_rows, table_files
from memevo.environments.benchmarks.files import validated as validated_record
from memevo.environments.benchmarks.locomo import UNSTEMMED, read_conversation
from memevo.environments.benchmarks.locomo import messages as locomo_messages
from memevo.environments.capabilities import Capabilities
from memevo.environments.protocol import AnswerScore, QuestionView
from memevo.environments.replay import ReplayItem, ReplayQuestion, ReplaySession

if TYPE_CHECKING:
    from memevo.agents.llm.protocol import ChatClient
    from memevo.environments.runner import EpisodeConfig

SCORED = ("Locomo", "DialSim", "NFCats")
_START = datetime(2025, 1, 1)
UNSUPPORTED = {
    "LexEval": "ROUGE-L over jieba-tokenised Chinese (jieba is not installed)",
    "WritingBench": "the WritingBench critic model",
    "HelloBench": "HelloBench's checklist judge",
    "IdeaBench": "BERTScore and IdeaBench's ranking judge",
    "JRE-L": "ROUGE-L, BERTScore and readability metrics",
    "LimitGen": "LimitGen's rating judge",
    "JuDGE": "JuDGE's legal extraction metrics",
    "WritingPrompts": "METEOR (nltk with WordNet)",
}


class Message(LazyModel):
    role: Literal["system", "user", "assistant"]
    content: str


class Feedback(LazyModel):
    round: int
    implicit_action: str
    terminated: bool = False


class Record(LazyModel):
    test_idx: int
    input_prompt: str | None = None
    input_chat_messages: list[Message] | None = None
    dataset_name: str
    lang: str
    info: dict[str, Any]
    dialog: list[Message] = []
    implicit_feedback: list[Feedback] = []

    @field_validator("info", "dialog", "implicit_feedback", "input_chat_messages", mode="before")
    @classmethod
    def _decoded(cls, value: Any) -> Any:
        """The Hub files keep these fields as JSON or Python-literal text; MemoryBench decodes them the same way."""
        if not isinstance(value, str):
            return value
        for decode in (json.loads, ast.literal_eval):
            try:
                return decode(value)
            except (ValueError, SyntaxError):
                continue
        return value

    @property
    def prompt(self) -> str:
        if self.input_prompt:
            return self.input_prompt
        return "\n\n".join(f"{m.role}: {m.content}" for m in self.input_chat_messages or [])


DIALOG_FIELD = "dialog"
"""The training dialogs' field by default: the dialogs of MemoryBench's vanilla baseline."""


class Dataset(LazyModel):
    name: str
    train: list[Record]
    test: list[Record]
    corpus: list[ReplaySession] = []
    dialog_field: str = Field(description="The field the training dialogs were read from.")


def read_datasets(root: Path, *, dialog_field: str = DIALOG_FIELD, limit: int | None = None) -> list[Dataset]:
    """Every dataset under ``root`` (see the module docstring for the layouts), splits read row by row; the
    training dialogs from ``dialog_field`` (see ``training_dialog_field``)."""
    if not root.is_dir():
        raise UserInputError("expected the MemoryBench folder (with dataset/ and corpus/) or one dataset's folder",
                             source=str(root))
    folders = _dataset_folders(root)
    if not folders:
        raise UserInputError("no dataset folders with train/ and test/ splits found", source=str(root))
    corpus_root = root / "corpus" if (root / "corpus").is_dir() else root.parent.parent / "corpus"
    return [_dataset(folder, corpus_root, dialog_field) for folder in folders[:limit]]


def _dataset_folders(root: Path) -> list[Path]:
    base = root / "dataset" if (root / "dataset").is_dir() else root
    candidates = [base] if (base / "test").is_dir() else sorted(p for p in base.iterdir() if p.is_dir())
    return [folder for folder in candidates if (folder / "train").is_dir() and (folder / "test").is_dir()]


def _dataset(folder: Path, corpus_root: Path, dialog_field: str) -> Dataset:
    train, used = _records(folder / "train", dialog_field)
    test, _ = _records(folder / "test", None)
    corpus_file = corpus_root / f"{folder.name}.jsonl"
    corpus = _corpus(corpus_file, folder.name) if corpus_file.is_file() else []
    return Dataset(name=folder.name, train=train, test=test, corpus=corpus, dialog_field=used or dialog_field)


def training_dialog_field(columns: Collection[str], chosen: str, source: Path) -> str:
    """The field a training split's dialogs are read from: ``chosen`` where the split has it; else ``dialog``, a
    dataset's own dialogs (MemoryBench replays them for every dataset that has them, a baseline's only for LoCoMo
    and DialSim, which have no others); else a ``UserInputError`` naming the file and the field, listing the
    dialog fields the split has."""
    for field in (chosen, DIALOG_FIELD):
        if field in columns:
            return field
    present = sorted(name for name in columns if name.startswith("dialog"))
    raise UserInputError(f"no such field in this training split (its dialog fields: {', '.join(present) or 'none'}); "
                         "choose one with --dialog-field (data.dialog_field in an evolve config)", source=str(source),
                         field=chosen)


def _records(folder: Path, dialog_field: str | None) -> tuple[list[Record], str | None]:
    """The split's records and the field their dialogs came from; ``dialog_field`` None (a test split, whose dialogs
    are never replayed) reads no dialogs."""
    files = table_files(folder)
    if not files:
        raise UserInputError("no Arrow or Parquet files in this split", source=str(folder))
    records, used = [], None
    for file, index, row in iter_table_rows(files):
        if dialog_field is not None and used is None:
            used = training_dialog_field(row.keys(), dialog_field, file)
        feedback = "implicit_feedback" + (used or "").removeprefix("dialog")
        row = {**row, "dialog": row.get(used, []) if used else [],
               "implicit_feedback": row.get(feedback, []) if used else []}
        records.append(validated_record(Record, row, source=file, prefix=f"[{index}]"))
    return records, used


def _corpus(path: Path, name: str) -> list[ReplaySession]:
    """The corpus sessions: LoCoMo's (``text`` holds a JSON sample with its ``conversation``) or DialSim's (``text``
    is a script of ``[Date: ..., Session #N]`` headers followed by ``Speaker: line`` lines)."""
    for _, row in iter_json_records(existing_file(path)):
        text = row.get("text") if isinstance(row, dict) else None
        if not isinstance(text, str):
            raise UserInputError("a corpus line needs its 'text'", source=str(path), field="text")
        if name.startswith("DialSim"):
            return dialsim_sessions(text)
        conversation = read_conversation(json.loads(text).get("conversation", {}), path, "text.conversation")
        return [ReplaySession(id=f"corpus/session_{number}", time=conversation.dates[number],
                              messages=locomo_messages(turns, conversation.speaker_a))
                for number, turns in conversation.sessions.items()]
    return []


_DIALSIM_HEADER = re.compile(r"\[Date: (.*?), Session #(\d+)\]")
_DIALSIM_DATES = ("%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%Y-%m-%d", "%m/%d/%Y")


def dialsim_sessions(script: str) -> list[ReplaySession]:
    """DialSim's script as sessions; each line is a message alternately from the user's and the assistant's side,
    the speaker's name kept. A date in a form not recognised gives the session the time after the previous one."""
    parts = _DIALSIM_HEADER.split(script)
    sessions: list[ReplaySession] = []
    for date_text, number, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        lines = [line.strip() for line in body.strip().splitlines() if ":" in line]
        previous = sessions[-1].time if sessions else _START
        time = next((parsed for parsed in (_date(date_text, form) for form in _DIALSIM_DATES) if parsed), None)
        sessions.append(ReplaySession(id=f"corpus/session_{number}", time=time or previous + timedelta(days=1),
                                      messages=[{"role": "user" if i % 2 == 0 else "assistant", "content": line}
                                                for i, line in enumerate(lines)]))
    return sessions


def _date(text: str, form: str) -> datetime | None:
    try:
        return datetime.strptime(text.strip(), form)
    except ValueError:
        return None


def dialog_sessions(dataset: Dataset) -> list[ReplaySession]:
    """Each training dialog as one session, in ``test_idx`` order, with each round's implicit feedback noted on
    the user's next message (or on a closing message when the user ended the dialog)."""
    sessions = []
    for number, record in enumerate(sorted(dataset.train, key=lambda r: r.test_idx)):
        notes = {feedback.round: f"(Your last reply got: {feedback.implicit_action}"
                                 f"{'; the user ended the conversation' if feedback.terminated else ''}.)"
                 for feedback in record.implicit_feedback}
        messages: list[dict[str, str]] = []
        user_turns = 0
        for message in record.dialog:
            content = message.content
            if message.role == "user":
                content = f"{notes[user_turns]} {content}" if user_turns in notes else content
                user_turns += 1
            messages.append({"role": "assistant" if message.role == "assistant" else "user", "content": content})
        if user_turns in notes:
            messages.append({"role": "user", "content": notes[user_turns]})
        if messages:
            sessions.append(ReplaySession(id=f"train/{record.test_idx}", time=_START + timedelta(hours=number),
                                          messages=messages))
    return sessions


def scorer_needed(name: str) -> str | None:
    """What a dataset's metric needs that memevo lacks; None when memevo scores it."""
    if name.startswith(SCORED):
        return None
    return next((text for prefix, text in UNSUPPORTED.items() if name.startswith(prefix)), "a metric for it")


class MemoryBenchEnvironment(BenchmarkEnvironment):
    """One item per dataset: its corpus and training dialogs replayed, then its test prompts. Datasets whose metric
    memevo cannot compute are left out, each with a load warning."""

    name: ClassVar[str] = "memorybench"
    capabilities: ClassVar[Capabilities] = Capabilities(answers="free_text", categories=True, options=("dialog_field",))

    def __init__(self, episode: EpisodeConfig, *, judge: ChatClient | None = None,
                 dialog_field: str = DIALOG_FIELD) -> None:
        super().__init__(episode, judge=judge)
        self.dialog_field = dialog_field
        self.stem = porter_stemmer()

    def load_items(self, source: str | Path, *, limit: int | None = None) -> list[ReplayItem]:
        self.load_warnings = []
        items = []
        for dataset in read_datasets(Path(source), dialog_field=self.dialog_field, limit=limit):
            needs = scorer_needed(dataset.name)
            if needs is not None:
                self.load_warnings.append(f"dataset {dataset.name} left out: its metric needs {needs}")
                continue
            empty = sum(not record.dialog for record in dataset.train)
            if empty:
                self.load_warnings.append(f"dataset {dataset.name}: {empty} of {len(dataset.train)} training records "
                                          f"have no dialog under '{dataset.dialog_field}' (nothing of theirs is "
                                          "replayed)")
            items.append(self._item(dataset))
        return items

    def _item(self, dataset: Dataset) -> ReplayItem:
        sessions = [*dataset.corpus, *dialog_sessions(dataset)]
        if not sessions:
            raise UserInputError(f"no corpus and no training dialogs under '{dataset.dialog_field}' to replay",
                                 source=dataset.name)
        asked_at = sessions[-1].time + timedelta(hours=1)
        questions = []
        for record in sorted(dataset.test, key=lambda r: r.test_idx):
            judged = not dataset.name.startswith("Locomo")
            questions.append(ReplayQuestion(query=record.prompt, gold=str(record.info.get("golden_answer", "")),
                                            category=dataset.name, scoring="llm_judge" if judged else "token_f1",
                                            asked_at=asked_at, reference=record.info))
        return ReplayItem(id=dataset.name, sessions=sessions, questions=questions, split="test")

    def answer_prompt(self, question: QuestionView) -> str:
        return question.query

    async def score_answer(self, item: ReplayItem, period: int, question: QuestionView, reply: str) -> AnswerScore:
        info = item.questions[question.index].reference
        if item.id.startswith("Locomo"):
            return self._locomo(info, reply)
        if self.judge is None:
            raise UserInputError(f"MemoryBench's {item.id} is scored by an LLM judge: configure llm.judge",
                                 field="llm.judge")
        if item.id.startswith("DialSim"):
            return await self._dialsim(self.judge, question, reply)
        return await self._nfcats(self.judge, question.query, reply)

    def _locomo(self, info: dict[str, Any], reply: str) -> AnswerScore:
        """LoCoMo's rules on MemoryBench's records: ``info`` holds the category and the gold answer (for category
        5, the two options by letter, which the prompt lists as "(a) ... (b) ...")."""
        category = int(info.get("category", 0))
        gold = info.get("golden_answer")
        if category == 5:
            options = json.loads(gold) if isinstance(gold, str) else gold
            score = says_not_mentioned(lettered_option(reply, options) if isinstance(options, dict) else reply)
            return AnswerScore(score=score, method="substring_match", correct=score == 1.0,
                               detail="LoCoMo adversarial: credit for saying it is not mentioned")
        text = str(gold).split(";")[0].strip() if category == 3 else str(gold)
        score = multi_part_f1(reply, text, self.stem) if category == 1 else locomo_f1(reply, text, self.stem)
        return AnswerScore(score=score, method="token_f1", correct=score == 1.0,
                           detail=None if self.stem is not None else UNSTEMMED)

    @staticmethod
    async def _dialsim(judge: ChatClient, question: QuestionView, reply: str) -> AnswerScore:
        """DialSim's accuracy: an exact reply (a trailing full stop allowed) is right outright, else a judge decides."""
        gold = question.gold.strip().lower()
        if reply.strip().lower() in (gold, f"{gold}."):
            return AnswerScore(score=1.0, method="exact_match", correct=True)
        score, verdict = await judge_answer(judge, question.query, question.gold, reply, prompt=DIALSIM_JUDGE)
        return AnswerScore(score=score, method="llm_judge", correct=score == 1.0, detail=verdict)

    @staticmethod
    async def _nfcats(judge: ChatClient, question: str, reply: str) -> AnswerScore:
        """NFCats' 1-5 rating, as credit (rating - 1) / 4; a reply without a rating scores 0, kept as the detail."""
        prompt = NFCATS_JUDGE.format(question=question, reply=reply)
        answer = await judge.chat([{"role": "user", "content": prompt}], role="judge", temperature=0.0, max_tokens=8)
        rating = next((int(n) for n in re.findall(r"\d+", answer.text) if 1 <= int(n) <= 5), None)
        score = 0.0 if rating is None else (rating - 1) / 4
        return AnswerScore(score=score, method="llm_judge", correct=rating == 5,
                           detail=f"rating {rating}/5" if rating is not None else f"no rating: {answer.text!r}")


DIALSIM_JUDGE = ("Is the prediction correct for the question, given the true answer? It is correct when it says "
                 "essentially the same as the true answer. Reply yes or no only.\n\nQuestion: {question}\n\n"
                 "True answer: {gold}\n\nPrediction: {reply}")
NFCATS_JUDGE = ("Rate the answer to the question from 1 to 5: 1 irrelevant, 2 related but not solving it, 3 solving "
                "part of it, 4 solving most of it, 5 solving it perfectly. Reply with the number only.\n\n"
                "Question: {question}\n\nAnswer: {reply}")
