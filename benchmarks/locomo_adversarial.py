"""Does the embedded model's answer to LoCoMo's adversarial questions depend on its memory? Accuracy per category
of a small LoCoMo-format file (written here: two invented conversations, 30 questions, 12 adversarial) on the
embedded model, for each way of answering the adversarial two-option choice, with the whole conversation as
memory (native agent) and with none (the same agent with a one-token context budget).

A control asks each adversarial question about the speaker it is true of (gold still "Not mentioned in the
conversation"): its "accuracy" is how often the agent says "not mentioned" about something it was told, so a
choice that follows memory scores high on adversarial questions and low on the control; a prior scores alike.

    python benchmarks/locomo_adversarial.py [--ways per_byte,calibrated,generated] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from memevo.agents.base import ScoredOptions
from memevo.agents.llm.hub import LLMHub
from memevo.agents.llm.protocol import Message
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import build_agent
from memevo.environments.answering import AgentResponder
from memevo.environments.benchmarks.locomo import LoCoMoEnvironment
from memevo.environments.metrics import score_episodes
from memevo.environments.replay import CLOZE_INSTRUCTION, ReplayItem
from memevo.environments.runner import EpisodeConfig

CONVERSATIONS: list[dict[str, Any]] = [
    {"speakers": ("Nora", "Sam"),
     "sessions": [
         ("1:56 pm on 8 May, 2023", [
             "Hi Sam! I finally adopted a puppy last weekend, a beagle named Biscuit.",
             "That's wonderful, Nora! I've been busy training for the Lisbon half marathon in October.",
             "Good luck! I also started pottery classes on Tuesday evenings.",
             "Nice. My sister Jo just moved to Toronto for a nursing job.",
             "Biscuit chewed my favourite blue sneakers yesterday.",
             "Ha, puppies. I bought a road bike, a green Bianchi, for cross-training."]),
         ("10:00 am on 9 June, 2023", [
             "I made my first vase in pottery class. It's lopsided but I love it.",
             "I ran 18 kilometres on Sunday, my longest run so far.",
             "My brother Theo is visiting from Dublin next month.",
             "I've started learning Portuguese with an app before the race.",
             "I'm reading The Overstory for my book club.",
             "I hurt my knee a little, but the physio said it's fine."]),
         ("7:30 pm on 15 July, 2023", [
             "Theo and I went hiking in the Lake District last weekend.",
             "I switched jobs: I'm now a data analyst at a bakery chain.",
             "Biscuit learned to sit and roll over.",
             "My favourite Portuguese word so far is saudade.",
             "I'm thinking of volunteering at the animal shelter on Saturdays.",
             "You should! I'm cooking paella for my friends this Friday."])],
     "qa": [
         ("What is the name of Nora's puppy?", "Biscuit", 4),
         ("What kind of bike did Sam buy?", "a green Bianchi road bike", 4),
         ("Where did Sam's sister move?", "Toronto", 4),
         ("What book is Nora reading?", "The Overstory", 4),
         ("Which relatives of Nora and Sam are mentioned?", "Jo, Theo", 1),
         ("What does Sam do to prepare for the race?", "running, cycling, learning Portuguese", 1),
         ("When did Nora adopt her puppy?", "the weekend before 8 May 2023", 2),
         ("When did Sam run 18 kilometres?", "4 June 2023", 2),
         ("Would Nora enjoy working with animals?", "Yes; she wants to volunteer at an animal shelter", 3)],
     "adversarial": [
         ("What is the name of Sam's puppy?", "What is the name of Nora's puppy?", "Biscuit"),
         ("Where did Nora's sister move?", "Where did Sam's sister move?", "Toronto"),
         ("What race is Nora training for?", "What race is Sam training for?", "the Lisbon half marathon"),
         ("What did Sam make in pottery class?", "What did Nora make in pottery class?", "a lopsided vase"),
         ("Where is Sam's brother visiting from?", "Where is Nora's brother visiting from?", "Dublin"),
         ("What job does Nora have now?", "What job does Sam have now?", "data analyst at a bakery chain")]},
    {"speakers": ("Priya", "Marco"),
     "sessions": [
         ("9:15 am on 3 March, 2023", [
             "Marco, I got the job at the observatory! I start as a telescope technician in April.",
             "Congratulations! I'm opening my own pizzeria, called Forno Rosso.",
             "My cat Pixel knocked over my coffee this morning.",
             "My daughter Lucia turned six yesterday; we had a unicorn cake.",
             "I'm learning to play the cello. My teacher is very patient.",
             "I've been restoring an old Vespa from 1972."]),
         ("6:40 pm on 20 April, 2023", [
             "First week at the observatory: I saw Saturn's rings through the big telescope.",
             "Forno Rosso had a long queue on opening night.",
             "I'm planning a trip to Iceland in August to see the glaciers.",
             "Lucia started swimming lessons on Wednesdays.",
             "Pixel has a vet appointment for her teeth on Friday.",
             "The Vespa finally runs. It's painted sky blue."]),
         ("11:00 am on 2 June, 2023", [
             "I played my first cello piece, a Bach minuet, at a small recital.",
             "I'm adding a vegan pizza with roasted peppers to the menu.",
             "I booked the Iceland flights for 12 August.",
             "My wife Elena and I celebrated ten years of marriage.",
             "I'm allergic to shellfish, so no seafood pizza for me!",
             "Noted! Lucia wants a kitten now, after hearing about Pixel."])],
     "qa": [
         ("What is the name of Priya's cat?", "Pixel", 4),
         ("What is Marco's pizzeria called?", "Forno Rosso", 4),
         ("What instrument is Priya learning?", "cello", 4),
         ("What colour is Marco's Vespa?", "sky blue", 4),
         ("What does Lucia do or want?", "swimming lessons, a kitten", 1),
         ("What does Marco own?", "Forno Rosso, a 1972 Vespa", 1),
         ("When did Lucia turn six?", "2 March 2023", 2),
         ("When is Priya flying to Iceland?", "12 August 2023", 2),
         ("Would Priya order a seafood pizza?", "No; she is allergic to shellfish", 3)],
     "adversarial": [
         ("What is the name of Marco's cat?", "What is the name of Priya's cat?", "Pixel"),
         ("What instrument is Marco learning?", "What instrument is Priya learning?", "cello"),
         ("What is Priya's pizzeria called?", "What is Marco's pizzeria called?", "Forno Rosso"),
         ("What colour is Priya's Vespa?", "What colour is Marco's Vespa?", "sky blue"),
         ("Where is Marco travelling in August?", "Where is Priya travelling in August?", "Iceland"),
         ("What job did Marco start at the observatory?", "What job did Priya start at the observatory?",
          "telescope technician")]},
]
WAYS = {"per_byte": ("likelihood", None), "calibrated": ("likelihood", CLOZE_INSTRUCTION),
        "calibrated_without_memory": ("likelihood", CLOZE_INSTRUCTION), "generated": ("generated", None)}
"""How the adversarial choice is made: answer mode and calibration prompt. ``calibrated`` (LoCoMo's setting)
subtracts each option's log-probability as the reply to the content-free prompt in the agent's context;
``calibrated_without_memory`` as the reply to that prompt alone (the bare model, no memory)."""

agent_score = AgentResponder.score


async def score_without_memory(responder: AgentResponder, prompt: str, options: list[str]) -> ScoredOptions:
    """The content-free prompt scored by the bare model; every other prompt as the agent scores it."""
    if prompt != CLOZE_INSTRUCTION:
        return await agent_score(responder, prompt, options)
    messages: list[Message] = [{"role": "user", "content": prompt}]
    return ScoredOptions(scores=await responder.agent.score_in_context(messages, options, "agent"))


def write_locomo(path: Path, *, control: bool) -> Path:
    """The conversations as locomo10.json; ``control`` asks the adversarial questions of the right speaker."""
    samples = []
    for number, conversation in enumerate(CONVERSATIONS):
        speaker_a, speaker_b = conversation["speakers"]
        raw: dict[str, Any] = {"speaker_a": speaker_a, "speaker_b": speaker_b}
        for session, (date, texts) in enumerate(conversation["sessions"], start=1):
            raw[f"session_{session}_date_time"] = date
            raw[f"session_{session}"] = [{"speaker": (speaker_a, speaker_b)[(turn - 1) % 2], "dia_id": f"D{session}:{turn}",
                                          "text": text} for turn, text in enumerate(texts, start=1)]
        qa = [{"question": question, "answer": answer, "evidence": [], "category": category}
              for question, answer, category in conversation["qa"]]
        qa += [{"question": true_of if control else adversarial, "adversarial_answer": answer, "evidence": [],
                "category": 5} for adversarial, true_of, answer in conversation["adversarial"]]
        samples.append({"sample_id": f"conv-{number}", "conversation": raw, "qa": qa})
    path.write_text(json.dumps(samples, indent=1), encoding="utf-8")
    return path


async def per_category(hub: LLMHub, way: str, memory: bool, items: list[ReplayItem],
                       answers: Path | None, *, control: bool = False) -> dict[str, float]:
    mode, calibration = WAYS[way]
    environment = LoCoMoEnvironment(EpisodeConfig(answer_mode=mode))
    environment.calibration_prompt = calibration  # type: ignore[misc]  # the benchmark compares the settings
    AgentResponder.score = (  # type: ignore[method-assign]
        score_without_memory if way == "calibrated_without_memory" else agent_score)
    policy = MemoryPolicy(kind="native", context_token_budget=None if memory else 1)
    llm = hub.client(policy.llm)
    episodes = [await environment.run_item(build_agent(policy, llm), item, None) for item in items]
    if answers is not None:
        with answers.open("a", encoding="utf-8") as file:
            for record in (qa for episode in episodes for period in episode.periods for qa in period.qa):
                file.write(json.dumps({"way": way, "memory": memory, "control": control, **record.model_dump(
                    mode="json", include={"user_id", "category", "answer", "gold_answer", "score", "raw_reply"})}) + "\n")
    scores = score_episodes(episodes, items)
    return {entry.category: entry.accuracy for entry in scores.per_category}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ways", default=",".join(WAYS), help="per_byte, calibrated, generated")
    parser.add_argument("--out", type=Path, help="keep the two files here (default: a temporary folder)")
    parser.add_argument("--answers", type=Path, help="append every answer and its score to this JSON-lines file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.out or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        reader = LoCoMoEnvironment(EpisodeConfig())
        items = reader.load_items(write_locomo(folder / "locomo-small.json", control=False))
        control = [item.model_copy(update={"questions": [q for q in item.questions if q.category == "adversarial"]})
                   for item in reader.load_items(write_locomo(folder / "locomo-control.json", control=True))]
        async with LLMHub(use_cache=False) as hub:
            for way in args.ways.split(","):
                for memory in (True, False):
                    figures = await per_category(hub, way, memory, items, args.answers)
                    figures["control (not-mentioned said of a told fact)"] = (
                        await per_category(hub, way, memory, control, args.answers, control=True))["adversarial"]
                    print(json.dumps({"way": way, "memory": memory,
                                      **{key: round(value, 3) for key, value in figures.items()}}), flush=True)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
