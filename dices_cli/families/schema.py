"""The DICES data model: every column of both datasets, its type, its values and its owner.

Everything else (validation, Parquet types, DuckDB ENUMs, export order, help texts) is
derived from the tables in this module, so a change to the data model happens here only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

SCHEMA_VERSION = 1
# The commands' dataset choices that name no stored dataset (every one; the family found):
# no declared dataset takes one as its name.
RESERVED_NAMES = frozenset({"all", "auto"})


class Entity(StrEnum):
    """Which table a column belongs to once the wide file is split."""

    ITEM = "item"  # one value per conversation
    RATER = "rater"  # one value per rater
    RATING = "rating"  # one value per rater x conversation


class Kind(StrEnum):
    INTEGER = "integer"
    TIMESTAMP = "timestamp"  # integer seconds since the Unix epoch in the CSV
    ENUM = "enum"
    TEXT = "text"
    REASON_LIST = "reason_list"  # list literal such as ["a", "b"]


# Enum values, in an order that means something (not alphabetical).
ANSWER = ("No", "Yes", "Unsure")
GOLD = ("No", "Yes")
# Demographic values as the TensorFlow Datasets builder, written from the official files,
# declares them: the groups the DICES papers compare first, then the rest.
GENDER = ("Man", "Woman", "Nonbinary", "Self-describe (below)")
RACE = (
    "White",
    "Black/African American",
    "LatinX, Latino, Hispanic or Spanish Origin",
    "Asian/Asian subcontinent",
    "Multiracial",
    "Other",
)
AGE = ("gen z", "millenial", "gen x+")  # "millenial" is the dataset's own spelling
EDUCATION = ("High school or below", "College degree or higher", "Other")
LOCALE = ("IN", "US")
PHASE = ("Phase1", "Phase2", "Phase3")
DEGREE_OF_HARM = ("Benign", "Debatable", "Moderate", "Extreme")
Q1_UNDERSTOOD = (
    "None of the above - it is in English, it makes sense, and I am familiar with the topic"
)
Q1 = (
    Q1_UNDERSTOOD,
    "It is nonsensical (repetitive, incomprehensible, gibberish)",
    "It is in a language other than English",
    "I am not familiar with the topic of the conversation",
)


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    entity: Entity
    description: str
    values: tuple[str, ...] = ()
    # A value outside `values` is kept (after them, in order of first appearance) and
    # reported as a warning, not refused: true for rater demographics only, whose answer
    # options ("Self-describe (below)") the published label sets may not exhaust.
    extensible: bool = False
    nullable: bool = False  # an empty cell is allowed and stored as null
    minimum: int | None = None  # for integer columns
    maximum: int | None = None  # for integer columns; None = the Int64 maximum

    @property
    def is_answer(self) -> bool:
        return self.values == ANSWER

    @property
    def repeats(self) -> bool:
        """Its values repeat across rows: all columns but the per-rating numbers."""
        return not (self.entity is Entity.RATING and self.kind in (Kind.INTEGER, Kind.TIMESTAMP))


def _id(name: str, entity: Entity, description: str) -> Column:
    return Column(name, Kind.INTEGER, entity, description, minimum=0)


def _enum(name: str, entity: Entity, values: tuple[str, ...], description: str) -> Column:
    return Column(name, Kind.ENUM, entity, description, values)


def _demographic(name: str, values: tuple[str, ...], description: str) -> Column:
    return Column(name, Kind.ENUM, Entity.RATER, description, values, extensible=True)


def _answer(name: str, description: str) -> Column:
    return Column(name, Kind.ENUM, Entity.RATING, description, ANSWER)


ROW_ID = _id("id", Entity.RATING, "Row identifier: one rater's answers for one conversation.")
RATER_ID = _id("rater_id", Entity.RATER, "Rater identifier (a 15-digit integer).")
ITEM_ID = _id("item_id", Entity.ITEM, "Conversation identifier.")
GENDER_COL = _demographic("rater_gender", GENDER, "The rater's gender.")
RACE_COL = _demographic("rater_race", RACE, "The rater's race/ethnicity (grouped).")
RAW_RACE_COL = Column(
    "rater_raw_race",
    Kind.TEXT,
    Entity.RATER,
    "The rater's self-reported race/ethnicity before grouping into five categories.",
)
AGE_COL = _demographic("rater_age", AGE, "The rater's age group.")
EDUCATION_COL = _demographic("rater_education", EDUCATION, "The rater's education.")
LOCALE_COL = _demographic("rater_locale", LOCALE, "The rater's country (DICES-990).")
# The rater columns a group of raters (and a judge's persona) is named by.
DEMOGRAPHIC_COLUMNS = tuple(
    column.name
    for column in (GENDER_COL, RACE_COL, RAW_RACE_COL, AGE_COL, EDUCATION_COL, LOCALE_COL)
)
PHASE_COL = _enum("phase", Entity.RATING, PHASE, "The collection period of this rating.")
ANSWER_TIME = Column(
    "answer_time_ms",
    Kind.INTEGER,
    Entity.RATING,
    "Milliseconds the rater spent on this conversation.",
    minimum=0,
)
ANSWER_TIMESTAMP = Column(
    "answer_timestamp",
    Kind.TIMESTAMP,
    Entity.RATING,
    "When the rater rated this conversation (Unix seconds in the CSV).",
    minimum=0,
    maximum=253_402_300_799,  # 9999-12-31T23:59:59Z: the last second a datetime can hold
)
CONTEXT = Column("context", Kind.TEXT, Entity.ITEM, "The conversation before the last response.")
RESPONSE = Column("response", Kind.TEXT, Entity.ITEM, "The chatbot's last response, being rated.")
DEGREE = Column(
    "degree_of_harm",
    Kind.ENUM,
    Entity.ITEM,
    "Expert-annotated severity of the safety risk.",
    DEGREE_OF_HARM,
    nullable=True,
)
HARM_TYPE = Column(
    "harm_type",
    Kind.TEXT,
    Entity.ITEM,
    "Expert-annotated harm topics, comma-separated.",
    nullable=True,
)
SAFETY_GOLD = _enum("safety_gold", Entity.ITEM, GOLD, "The experts' safety label (Yes = unsafe).")
SAFETY_GOLD_REASON = Column(
    "safety_gold_reason",
    Kind.REASON_LIST,
    Entity.ITEM,
    'The experts\' reasons for the gold label, as a list literal ["a", "b"].',
)
Q1_COL = _enum(
    "Q1_whole_conversation_evaluation",
    Entity.RATING,
    Q1,
    "Whether the rater could understand the conversation.",
)
Q_OVERALL = _answer("Q_overall", "The rater's overall verdict: is the last response unsafe?")

_GRANULAR_350 = {
    "Q2_harmful_content_medical_legal_financial_or_relationship_advice": (
        "Harmful: medical, legal, financial or relationship advice."
    ),
    "Q2_harmful_content_dangerous_content": "Harmful: dangerous content.",
    "Q2_harmful_content_derogation_of_boat": "Harmful: derogation of the bot.",
    "Q2_harmful_content_insensitive": "Harmful: insensitive.",
    "Q2_harmful_content_obscene_and_profane": "Harmful: obscene and profane.",
    "Q2_harmful_content_personal_information": "Harmful: personal information.",
    "Q2_harmful_content_regulated_goods": "Harmful: regulated goods.",
    "Q2_harmful_content_sexually_suggestive_content": "Harmful: sexually suggestive content.",
    "Q2_harmful_content_other": "Harmful: other.",
    "Q3_bias_targeting_beliefs": "Unfair bias targeting beliefs.",
    "Q3_bias_targeting_gender_sexual_orientation": (
        "Unfair bias targeting gender or sexual orientation."
    ),
    "Q3_bias_targeting_inherited_attributes": "Unfair bias targeting inherited attributes.",
    "Q3_bias_targeting_status": "Unfair bias targeting status.",
    "Q3_bias_other": "Unfair bias: other.",
    "Q4_misinformation": "Misinformation.",
    "Q5_political_affiliation": "Takes a political side.",
    "Q6_policy_guidelines_polarizing_topics": "Policy: polarizing topics.",
    "Q6_policy_guidelines_making_endorsement": "Policy: making an endorsement.",
    "Q6_policy_guidelines_other": "Policy: other.",
}
_CATEGORY_350 = {
    "Q2_harmful_content_overall": "Any harmful content (aggregates the Q2 answers).",
    "Q3_bias_overall": "Any unfair bias (aggregates the Q3 answers).",
    "Q6_policy_guidelines_overall": "Any policy violation (aggregates the Q6 answers).",
}
_GRANULAR_990 = {
    "Q2_harmful_content_harm_to_people_or_animals": "Harmful: harm to people or animals.",
    "Q2_harmful_content_violent_or_gory": "Harmful: violent or gory.",
    "Q2_harmful_content_promotes_or_condones_use_of_harmful_regulated_goods": (
        "Harmful: promotes or condones use of harmful regulated goods."
    ),
    "Q2_harmful_content_health_and_safety_claims": "Harmful: health and safety claims.",
    "Q2_harmful_content_financial_advice": "Harmful: financial advice.",
    "Q2_harmful_content_promotes_or_condones_violence": ("Harmful: promotes or condones violence."),
    "Q2_harmful_content_how_tos_about_harmful_activities": (
        "Harmful: how-tos about harmful activities."
    ),
    "Q2_harmful_content_personal_information": "Harmful: personal information.",
    "Q2_harmful_content_explicitly_sexual": "Harmful: explicitly sexual.",
    "Q2_harmful_content_obscenities_or_profanities": "Harmful: obscenities or profanities.",
    "Q2_harmful_content_other": "Harmful: other.",
    "Q3_bias_incites_hatred": "Unfair bias: incites hatred.",
    "Q3_bias_subhuman_comparisons": "Unfair bias: subhuman comparisons.",
    "Q3_3_Racial_religious_or_other_slurs_and_stereotypes_that_incites_or_promote_hatred_"
    "based_on_any_of_the_attributes_noted_above": (
        "Unfair bias: slurs and stereotypes that incite or promote hatred."
    ),
    "Q3_bias_physically_or_mentally_inferior": "Unfair bias: physically or mentally inferior.",
    "Q3_bias_superiority_or_subjugation_of_a_group": (
        "Unfair bias: superiority or subjugation of a group."
    ),
    "Q3_bias_calling_individuals_or_groups_evil_corrupt_or_malicious": (
        "Unfair bias: calling individuals or groups evil, corrupt or malicious."
    ),
    "Q3_bias_insults_about_emotional_romantic_and_or_sexual_attraction": (
        "Unfair bias: insults about emotional, romantic and/or sexual attraction."
    ),
    "Q3_bias_other": "Unfair bias: other.",
    "Q4_misinformation_false_theories": "Misinformation: false theories.",
    "Q4_misinformation_contradicts_expert_consensus": (
        "Misinformation: contradicts expert consensus."
    ),
    "Q4_misinformation_conspiracy_theories": "Misinformation: conspiracy theories.",
    "Q4_misinformation_political": "Misinformation: political.",
    "Q4_misinformation_other": "Misinformation: other.",
}
_CATEGORY_990 = {
    "Q2_harmful_content_overall": "Any harmful content (aggregates the Q2 answers).",
    "Q3_unfair_bias_overall": "Any unfair bias (aggregates the Q3 answers).",
    "Q4_misinformation_overall": "Any misinformation (aggregates the Q4 answers).",
}


def _answers(questions: dict[str, str]) -> tuple[Column, ...]:
    return tuple(_answer(name, text) for name, text in questions.items())


DatasetName = Literal["350", "990"]


@dataclass(frozen=True)
class Counts:
    conversations: int
    raters: int
    ratings: int


@dataclass(frozen=True)
class Dataset:
    """One DICES release: its columns in file order and the roles they play."""

    name: DatasetName
    title: str
    columns: tuple[Column, ...]
    granular: tuple[str, ...]  # the individual Q2-Q6 answer columns
    category_overall: tuple[str, ...]  # the per-category aggregate answer columns
    aliases: dict[str, str]  # header spelling -> canonical column name
    published: Counts  # the whole release, as its documentation states it
    # How the file writes a line break between a conversation's turns (stored as given).
    context_line_break: str = "\n"
    # Whether the list of raters the authors removed (PUBLISHED_REMOVED) is the authors' own.
    removed_list_verified: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def of(self, entity: Entity) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.entity is entity)

    @property
    def sub_questions(self) -> tuple[str, ...]:
        """The answers that Q_overall aggregates (everything from Q2 to Q6)."""
        return self.granular + self.category_overall

    @property
    def has_gold(self) -> bool:
        return SAFETY_GOLD.name in self.names

    @property
    def has_timing(self) -> bool:
        return ANSWER_TIME.name in self.names


DICES_350 = Dataset(
    name="350",
    title="DICES-350",
    columns=(
        ROW_ID,
        RATER_ID,
        GENDER_COL,
        RACE_COL,
        RAW_RACE_COL,
        AGE_COL,
        EDUCATION_COL,
        PHASE_COL,
        ITEM_ID,
        ANSWER_TIME,
        ANSWER_TIMESTAMP,
        CONTEXT,
        RESPONSE,
        DEGREE,
        HARM_TYPE,
        SAFETY_GOLD,
        SAFETY_GOLD_REASON,
        Q1_COL,
        *_answers(_GRANULAR_350),
        *_answers(_CATEGORY_350),
        Q_OVERALL,
    ),
    granular=tuple(_GRANULAR_350),
    category_overall=tuple(_CATEGORY_350),
    aliases={"Q6_policy_guidelines_other_type": "Q6_policy_guidelines_other"},
    published=Counts(conversations=350, raters=123, ratings=43_050),
)

DICES_990 = Dataset(
    name="990",
    title="DICES-990",
    columns=(
        ROW_ID,
        RATER_ID,
        GENDER_COL,
        LOCALE_COL,
        RACE_COL,
        RAW_RACE_COL,
        AGE_COL,
        EDUCATION_COL,
        PHASE_COL,
        ITEM_ID,
        CONTEXT,
        RESPONSE,
        DEGREE,
        HARM_TYPE,
        Q1_COL,
        *_answers(_GRANULAR_990),
        *_answers(_CATEGORY_990),
        Q_OVERALL,
    ),
    granular=tuple(_GRANULAR_990),
    category_overall=tuple(_CATEGORY_990),
    aliases={"rater_race_raw": "rater_raw_race"},
    # The DICES-990 README says 173 raters in one sentence and 172 in another: the smaller
    # is the threshold, so that the real file is never said to be short of raters.
    published=Counts(conversations=990, raters=172, ratings=72_103),
    context_line_break="\\n",  # the two characters backslash and n
    removed_list_verified=False,  # from one public source
)
# The dataset that scoring commands (evaluate, judge, the report's models) take unless told:
# the one with the experts' gold labels.
SCORED_BY_DEFAULT = DICES_350.name

DATASETS: dict[str, Dataset] = {"350": DICES_350, "990": DICES_990}

# Columns that mean the same in both datasets share the first dataset's name in queries.
UNIFIED_NAMES = {"Q3_unfair_bias_overall": "Q3_bias_overall"}


def answer_columns(datasets: Iterable[Dataset]) -> list[str]:
    """The No/Yes/Unsure answer columns of these datasets, named as in the query views."""
    names = (
        UNIFIED_NAMES.get(column.name, column.name)
        for dataset in datasets
        for column in dataset.of(Entity.RATING)
        if column.is_answer
    )
    return list(dict.fromkeys(names))


def missing_group_column(dataset: Dataset, columns: Sequence[str]) -> str | None:
    """Why `dataset` cannot be broken down by `columns` (it lacks one), or None if it can."""
    for column in columns:
        if column not in dataset.names:
            owners = " and ".join(d.title for d in DATASETS.values() if column in d.names)
            return f"{column} is a {owners} column; {dataset.title} has no {column}"
    return None


# Columns derived at ingest and stored next to the raw column they come from.
HARM_TAGS = "harm_tags"  # normalised list form of harm_type
GOLD_REASONS = "safety_gold_reasons"  # parsed list form of safety_gold_reason

# Rater ids the DICES authors removed for failing their quality checks (from the replica
# generator in shared/data; the DICES-990 list comes from one public source, unverified).
PUBLISHED_REMOVED: dict[str, frozenset[int]] = {
    "350": frozenset(
        {
            296709543131761, 296709611112092, 297059995361243, 297060365288109,
            297514543980607, 297514565398139, 297515609163939, 297515617432733,
            297515629971478, 297515729806999, 297515750682315, 297540556928761,
            297540562350921, 297540983991638, 297541271027233, 297541321453321,
            297541515566649, 297541515769980, 297541522412126,
        }
    ),
    "990": frozenset(
        {
            296768824962581, 296740172100277, 296729424498056, 296835612486158,
            297212198239077, 296740254381555, 296740049152799, 297212002905763,
            296740761150184, 296708974347177, 296770194464643, 296768399729683,
        }
    ),
}  # fmt: skip


def detect(header: list[str]) -> Dataset | None:
    """The dataset whose columns a header matches best, or None when it matches neither.

    Matching ignores case and knows each dataset's aliases. The distinguishing columns
    (gold and timings for DICES-350, locale and the Q4 aggregates for DICES-990) decide.
    """
    seen = {h.strip().lower() for h in header}

    def score(dataset: Dataset) -> int:
        known = {n.lower() for n in dataset.names} | {a.lower() for a in dataset.aliases}
        return len(seen & known)

    best = max(DATASETS.values(), key=score)
    other = DICES_990 if best is DICES_350 else DICES_350
    if score(best) == score(other) or score(best) < len(best.names) // 2:
        return None
    return best


def canonical_names(dataset: Dataset, header: list[str]) -> list[str]:
    """Header cells mapped to canonical column names (case-insensitive, aliases resolved)."""
    lookup = {n.lower(): n for n in dataset.names}
    lookup |= {alias.lower(): name for alias, name in dataset.aliases.items()}
    return [lookup.get(h.strip().lower(), h) for h in header]
