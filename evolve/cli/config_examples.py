"""Commented starting configs, one per kind of file, printed by ``memevo config example KIND``.

Each loads as it is (``tests/evolve/test_config_reference.py`` loads every one), runs without an API key on the
embedded model, and says in its comments what to change first; every field is in experiments/REFERENCE.md.
"""

from __future__ import annotations

EVOLVE = """\
# An evolution: memevo evolve THIS_FILE   (every field: experiments/REFERENCE.md)
name: my-evolution
protocol: outer_loop            # or amemgym_period: AMemGym's protocol, each user's prompt evolves in its episode
seed:                           # the policy evolution starts from
  policy:
    kind: awi                   # native, rag, awi, awe, or a kind you registered
    llm: {max_tokens: 256}      # no base_url/model: $OPENAI_BASE_URL and $MEMEVO_MODEL, else the embedded model
  # policy_file: agent.yaml     # instead of policy: a policy file (memevo config example agent)
components: [write_prompt]      # the prompt components the proposer rewrites
feedback: {mode: complete, with_ground_truth: true}   # what the proposer learns about each question
objective: accuracy
environment: amemgym            # the benchmark the data is: amemgym, locomo, longmemeval, memoryagentbench, memorybench
data:
  synth: {users: 8, periods: 2, questions: 3, seed: 0}   # a procedural world, made without an LLM
  # path: data.json             # instead of synth: AMemGym-format data, or the environment's downloaded file
# test_environment:             # also score seed and best on another benchmark's items (held out, never evolved on)
#   environment: longmemeval
#   data: {path: longmemeval_s_cleaned.json}
split: {train: 4, val: 2, test: 2, seed: 0}   # users per split: counts, or fractions below 1
budget: {generations: 2, candidates: 2}       # also max_calls, max_tokens, max_dollars, patience
llm:
  proposer: {temperature: 0.8, max_tokens: 768}   # the model that writes new prompts
  # judge: {model: gpt-4o, temperature: 0.0}      # grades free-text answers (longmemeval, memorybench, ...)
episode: {rounds_init: 1, rounds_update: 1, simulator: template}
# hyperparameters:              # let Optuna tune policy settings as well
#   update_every: {low: 1, high: 4}
#   top_k: {choices: [10, 30]}
"""

ABLATE = """\
# An ablation, arms x seeds on the same users: memevo ablate THIS_FILE   (every field: experiments/REFERENCE.md)
# It starts from an evolution config: memevo config example evolve > evolution.yaml
name: my-ablation
base: evolution.yaml            # relative to this file; an arm may name its own with config:
seeds: [0, 1, 2]                # one evolution per arm and seed
seed_fields: [split.seed, optuna.seed]   # each seed draws its own users, the same for every arm
arms:                           # overrides are merged into the base, field by field
  - name: no-evolution
    overrides: {budget: {generations: 0}, feedback: {mode: none, with_ground_truth: false}}
  - name: complete
    overrides: {feedback: {mode: complete, with_ground_truth: true}}
baseline: no-evolution          # the arm the others are tested against
min_effect: 0.05                # the smallest difference worth finding; the report says how many seeds it needs
"""

AGENT = """\
# An agent policy: memevo eval --agent THIS_FILE --env data.json --out runs/eval   (every field:
# experiments/REFERENCE.md)
kind: awi                       # native, rag, awi, awe, or a kind you registered
update_every: 2                 # messages written to memory at a time
short_term: 4                   # raw messages kept in context after a write
top_k: 30                       # memories retrieved per question (rag, awe)
prompts: {}                     # prompt components to replace, by name; the others keep the kind's defaults
llm:
  # base_url: https://api.example.com/v1   # left out: $OPENAI_BASE_URL, else the embedded model
  # model: my-model             # left out: $MEMEVO_MODEL, else the one model the endpoint serves
  # api_key_env: OPENAI_API_KEY # the variable holding the key (the key is never stored)
  temperature: 0.0
  max_tokens: 512
"""

ENV = """\
# An LLM-generated environment: memevo env generate --config THIS_FILE --out generated
# (every field: experiments/REFERENCE.md; without an LLM: memevo env synth --users 2 --out data.json)
num_user_profiles: 4            # users, drawn from the persona file
num_periods: 3                  # update periods after period 0
num_questions: 5                # questions per user
num_states_per_question: 2      # variables each question depends on
num_choices_per_state: 3        # values each variable can take
num_changes_per_period: 2       # variables that change in each period
seed: 42
# personas_path: personas.json  # your own personas; default: the shipped sample
llm:                            # the generating model (no base_url/model: as for an agent)
  temperature: 0.2
  max_tokens: 2048
"""

EXAMPLES = {"evolve": EVOLVE, "ablate": ABLATE, "agent": AGENT, "env": ENV}
