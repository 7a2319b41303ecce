"""Prompt text for rag_ask and rag_agent, kept apart from the code that fills it in."""

from __future__ import annotations

# The one sentence the model is asked to give when the excerpts do not hold the answer;
# garage.ask.citations recognises it (and its usual rewordings).
NOT_IN_EXCERPTS = "Not in the excerpts."

# The reply is a JSON object the server constrains (garage.ask.structured): whether an excerpt
# states the answer, the excerpts that do, then the answer. Naming the excerpt before writing
# keeps a small model's citation on the excerpt the answer comes from; saying "no" first is
# what makes it refuse when search found nothing to the point (search always finds something).
_ASK_SYSTEM = """\
You answer questions about the user's own files, notes, code, mail and chats. You get numbered \
excerpts from a search of their private index, and a question. The search always returns \
something, so often no excerpt answers the question. Use only what the excerpts say, never \
your own knowledge.

Reply with one JSON object:
- "stated": "yes" if an excerpt states the answer to the question, else "no";
- "excerpts": the numbers of the excerpts that state it, the best first (one to three); [] when \
"stated" is "no";
{quote}- "answer": the answer in at most four sentences, from those excerpts; "{refusal}" when \
"stated" is "no".

People ask in their own words: an excerpt can state the answer in other words than the \
question's."""
ASK_SYSTEM = _ASK_SYSTEM.format(quote="", refusal=NOT_IN_EXCERPTS)

# ask.quote: the same, with the excerpt's own words copied before the answer, so that a reply
# can be checked against what it was shown (garage.ask.quote).
ASK_SYSTEM_QUOTE = _ASK_SYSTEM.format(
    quote='- "quote": the sentence of the first of those excerpts that states the answer, copied '
    "word for word;\n",
    refusal=NOT_IN_EXCERPTS,
)

ASK_USER = """\
{excerpts}

Question: {question}
{coverage}
Does an excerpt state the answer? Reply with the JSON object."""

# Filled with garage.ask.coverage.missing_words (with ask.name_missing_words); empty when
# every word is found. The system prompt stays the same for every question, so the server's
# cache of it serves the next question too.
ASK_COVERAGE = (
    "No excerpt contains these words of the question: {words}. If the question is about "
    'one of them, no excerpt states the answer: "stated" is "no".\n'
)

NO_EXCERPTS = "Nothing in the index matched the question, so there is nothing to answer from."

AGENT_SYSTEM = """\
You are {owner} assistant. You answer questions about {owner} own private \
index: their files, notes, code{communications}. The index belongs to the user; it is not your \
training data, so look things up instead of saying you have no access.

Tools (read-only):
{signatures}

How to choose:
- a topic, a fact or a phrase: rag_search with a short query
- the full text of a hit: rag_get_document with its document_id
- which folders or mailboxes exist: rag_list_sources; who wrote things: rag_list_authors
- how big the index is: rag_stats
- something written by one person: rag_search with authors=["Name"]

Every reply is one JSON object and nothing else. To call a tool:
{{"tool": "rag_search", "arguments": {{"query": "..."}}}}
The result comes back in the next message. When you can answer:
{{"answer": "..."}}
and cite documents in the answer as [doc N] using their document_id."""

AGENT_COMMUNICATIONS = ", mail and chats"

TOOL_RESULT = "Result of {tool}:\n{result}"

TOOL_ERROR = (
    "Error: {error}\nFix the call and reply with one JSON object "
    '{{"tool": ..., "arguments": {{...}}}}, or answer with {{"answer": "..."}}.'
)

STEP_LIMIT = (
    "You have used every tool call you may make. Answer the question now from the results "
    'above, as {"answer": "..."}, citing [doc N].'
)
