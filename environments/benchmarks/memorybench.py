"""MemoryBench (LittleDinoC/MemoryBench; Hugging Face ``THUIR/MemoryBench``, not shipped) as an environment.

Each of its datasets (``Locomo-0``, ``DialSim-friends``, ``NFCats``, ``JRE-L``, ...) has a train and a test split of
records with ``test_idx``, ``input_prompt`` (or ``input_chat_messages``), ``dataset_name``, ``lang``, ``info``
(the gold material), ``dialog`` (a recorded conversation between the system and a simulated user who gives
feedback) and ``implicit_feedback`` (the user's like / dislike / copy / none per round); datasets built on a long
conversation also have a ``corpus`` (``corpus/<name>.jsonl``). Its off-policy protocol is followed: the corpus
sessions, then every training dialog with its implicit feedback, are replayed into the agent; then the agent
answers the test prompts. Scores use each dataset's own metric where memevo can compute it (LoCoMo's F1,
DialSim's accuracy with a judge for inexact replies, NFCats' 1-5 judge rating); the others need models or
tokenisers memevo does not run and say n/a with what they need.

Accepted layout: the dataset snapshot (``dataset/<name>/{train,test}/*.arrow`` and ``corpus/``), one
``dataset/<name>`` folder, or Parquet shards as ``<name>/{train,test}/*.parquet``.
"""

from __future__ import annotations

import ast
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import field_validator

from memevo.agents.errors import UserInputError
from memevo.agents.lazy_model import LazyModel
from memevo.environments.benchmarks.environment import NO_JUDGE, BenchmarkEnvironment
from memevo.environments.benchmarks.files import existing_file, iter_json_records, iter_table_rows, table_files
from memevo.environments.benchmarks.files import validated as validated_record
from memevo.environments.benchmarks.items import BenchItem, Exchange, Question, Session
from memevo.environments.benchmarks.locomo import QA as LocomoQA
from memevo.environments.benchmarks.locomo import LocomoEnvironment, read_conversation
from memevo.environments.benchmarks.locomo import exchanges as locomo_exchanges
from memevo.environments.benchmarks.scores import QuestionScore

SPLITS = ("train", "test")
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


class Dataset(LazyModel):
    name: str
    train: list[Record]
    test: list[Record]
    corpus: list[Session] = []


def read_datasets(root: Path, *, dialog_field: str = "dialog", limit: int | None = None) -> list[Dataset]:
    """Every dataset under ``root`` (see the module docstring for the layouts), splits read row by row."""
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
    splits = {split: _records(folder / split, dialog_field) for split in SPLITS}
    corpus_file = corpus_root / f"{folder.name}.jsonl"
    corpus = _corpus(corpus_file, folder.name) if corpus_file.is_file() else []
    return Dataset(name=folder.name, train=splits["train"], test=splits["test"], corpus=corpus)


def _records(folder: Path, dialog_field: str) -> list[Record]:
    files = table_files(folder)
    if not files:
        raise UserInputError("no Arrow or Parquet files in this split", source=str(folder))
    records = []
    for file, index, row in iter_table_rows(files):
        chosen = dialog_field if dialog_field in row or dialog_field != "dialog" else "dialog_wo_memory"
        feedback = "implicit_feedback" + chosen.removeprefix("dialog")
        row = {**row, "dialog": row.get(chosen, []), "implicit_feedback": row.get(feedback, [])}
        records.append(validated_record(Record, row, source=file, prefix=f"[{index}]"))
    return records


def _corpus(path: Path, name: str) -> list[Session]:
    """A LoCoMo-form corpus (``text`` holds a JSON sample with ``conversation``) as sessions. DialSim's corpus is
    a script in its own text format, not read yet."""
    for _, row in iter_json_records(existing_file(path)):
        text = row.get("text") if isinstance(row, dict) else None
        if not isinstance(text, str):
            raise UserInputError("a corpus line needs its 'text'", source=str(path), field="text")
        if not name.startswith("Locomo"):
            raise UserInputError(f"corpus of {name} is not in LoCoMo form and cannot be read yet", source=str(path))
        conversation = read_conversation(json.loads(text).get("conversation", {}), path, "text.conversation")
        return [Session(session_id=f"{name}/session_{number}", when=conversation.dates[number],
                        exchanges=locomo_exchanges(turns)) for number, turns in conversation.sessions.items()]
    return []


def dialog_sessions(dataset: Dataset) -> list[Session]:
    """Each training dialog as one session, in ``test_idx`` order, with each round's implicit feedback noted on
    the user's next message (or on a closing message when the user ended the dialog)."""
    sessions = []
    for number, record in enumerate(sorted(dataset.train, key=lambda r: r.test_idx)):
        notes = {feedback.round: f"(Your last reply got: {feedback.implicit_action}"
                                 f"{'; the user ended the conversation' if feedback.terminated else ''}.) "
                 for feedback in record.implicit_feedback}
        paired: list[Exchange] = []
        user_turns = 0
        for message in record.dialog:
            if message.role == "user":
                paired.append(Exchange(user=notes.get(user_turns, "") + message.content, assistant=""))
                user_turns += 1
            elif message.role == "assistant" and paired and not paired[-1].assistant:
                paired[-1] = Exchange(user=paired[-1].user, assistant=message.content)
        if user_turns in notes:
            paired.append(Exchange(user=notes[user_turns].strip(), assistant=""))
        sessions.append(Session(session_id=f"{dataset.name}/train/{record.test_idx}",
                                when=_START + timedelta(hours=number), exchanges=paired))
    return sessions


class MemoryBenchEnvironment(BenchmarkEnvironment):
    name = "memorybench"

    def __init__(self, path: str | Path, *, dialog_field: str = "dialog", **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.dialog_field = dialog_field
        self.records: dict[str, Record] = {}
        self.locomo = LocomoEnvironment(self.path)

    def _load(self) -> list[BenchItem]:
        return [self._item(dataset) for dataset in read_datasets(self.path, dialog_field=self.dialog_field,
                                                                   limit=self.limit)]

    def _item(self, dataset: Dataset) -> BenchItem:
        sessions = [*dataset.corpus, *dialog_sessions(dataset)]
        asked_at = _START + timedelta(hours=len(dataset.train) + 1)
        questions = []
        for record in sorted(dataset.test, key=lambda r: r.test_idx):
            question_id = f"{dataset.name}/test/{record.test_idx}"
            self.records[question_id] = record
            questions.append(Question(question_id=question_id, category=dataset.name, question=record.prompt,
                                      prompt=record.prompt, asked_at=asked_at))
        return BenchItem(item_id=dataset.name, split="test", sessions=sessions, questions=questions)

    async def score(self, item: BenchItem, question: Question, reply: str) -> QuestionScore:
        record = self.records[question.question_id]
        base = dict(item_id=item.item_id, question_id=question.question_id, category=question.category, reply=reply)
        name = record.dataset_name
        if name.startswith("Locomo"):
            return QuestionScore(**base, metric=self.locomo.metric, value=self._locomo_f1(question, record, reply))
        if name.startswith("DialSim"):
            return await self._dialsim(item, question, record, reply)
        if name.startswith("NFCats"):
            return await self._nfcats(base, record, reply)
        needs = next((text for prefix, text in UNSUPPORTED.items() if name.startswith(prefix)),
                     f"a metric for the unknown dataset {name!r}")
        return QuestionScore(**base, metric="dataset metric", value=None, na_reason=f"needs {needs}")

    def _locomo_f1(self, question: Question, record: Record, reply: str) -> float:
        info = record.info
        category = int(info.get("category", 0))
        gold = info.get("golden_answer")
        if category == 5:
            options = json.loads(gold) if isinstance(gold, str) else gold
            letter = reply.strip().lower()
            chosen = options.get(letter, reply) if isinstance(options, dict) and len(letter) == 1 else reply
            return float("not mentioned" in chosen.lower() or "no information available" in chosen.lower())
        qa = LocomoQA(question=question.question, answer=str(gold), category=category)
        return self.locomo.reply_score(question.question_id, qa, reply)

    async def _dialsim(self, item: BenchItem, question: Question, record: Record, reply: str) -> QuestionScore:
        gold = str(record.info.get("golden_answer", "")).strip().lower()
        if reply.strip().lower() in (gold, f"{gold}."):
            return QuestionScore(item_id=item.item_id, question_id=question.question_id, category=question.category,
                                 metric="judge accuracy", value=1.0, reply=reply)
        prompt = (f"Is the prediction correct for the question, given the true answer? It is correct when it says "
                  f"essentially the same as the true answer. Reply yes or no only.\n\nQuestion: {question.question}"
                  f"\n\nTrue answer: {record.info.get('golden_answer', '')}\n\nPrediction: {reply}")
        return await self.judged(item, question, reply, prompt)

    async def _nfcats(self, base: dict[str, Any], record: Record, reply: str) -> QuestionScore:
        if self.judge is None:
            return QuestionScore(**base, metric="judge rating 1-5", value=None, na_reason=NO_JUDGE)
        prompt = ("Rate the answer to the question from 1 to 5: 1 irrelevant, 2 related but not solving it, 3 solving "
                  "part of it, 4 solving most of it, 5 solving it perfectly. Reply with the number only.\n\n"
                  f"Question: {record.prompt}\n\nAnswer: {reply}")
        rating = await self.judge.rating(prompt, low=1, high=5)
        if rating is None:
            return QuestionScore(**base, metric="judge rating 1-5", value=None, na_reason="judge gave no rating 1-5")
        return QuestionScore(**base, metric="judge rating 1-5", value=float(rating))
