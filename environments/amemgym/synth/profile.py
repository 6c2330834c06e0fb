"""Procedural user profiles in AMemGym's ``user_profile`` shape (reference A.2)."""

from __future__ import annotations

import random
import uuid

from memevo.environments.amemgym.data.models import UserProfile
from memevo.environments.amemgym.synth.vocabulary import ProfileParts

_PROFILE_LINES = ("name", "age", "gender", "marital_status", "education_level", "occupation",
                  "hobbies_and_interests", "skills_and_expertise", "complementary_info")


def make_profile(rng: random.Random, parts: ProfileParts) -> UserProfile:
    """A plausible person; the uuid comes from ``rng`` so the same seed gives the same id."""
    gender = rng.choice(("Female", "Male"))
    first = rng.choice(parts.female_names if gender == "Female" else parts.male_names)
    name = f"{first} {rng.choice(parts.last_names)}"
    occupation = rng.choice(parts.occupations)
    hobbies = rng.sample(parts.hobbies, rng.randint(2, 3))
    pronoun, possessive = ("she", "her") if gender == "Female" else ("he", "his")
    complementary = (
        f"{first} grew up in {rng.choice(parts.hometowns)} and now works as a {occupation}. "
        f"People who know {first} describe {'her' if gender == 'Female' else 'him'} as {rng.choice(parts.traits)}. "
        f"In {possessive} spare time {pronoun} enjoys {hobbies[0]} and likes advice that is concrete and practical."
    )
    fields = {
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "name": name,
        "age": rng.randint(23, 64),
        "gender": gender,
        "marital_status": rng.choice(parts.marital_statuses),
        "education_level": rng.choice(parts.education_levels),
        "occupation": occupation,
        "hobbies_and_interests": ", ".join(hobbies),
        "skills_and_expertise": ", ".join(rng.sample(parts.skills, 2)),
        "complementary_info": complementary,
    }
    formatted = "\n".join(f"{key}: {fields[key]}" for key in _PROFILE_LINES)
    return UserProfile(**fields, formatted_str=formatted)


def first_name(profile: UserProfile) -> str:
    """The given name used in event descriptions."""
    return profile.name.split(" ", 1)[0]
