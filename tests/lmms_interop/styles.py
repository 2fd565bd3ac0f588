"""28 ways a model states its choice (standard library only: the lmms-eval plugin model imports this).

Each style turns (letter, option text) into a response. The first eight are the styles the exported
task's old built-in fallback parser scored wrong (issue 10); the rest are other common forms.
"""

from __future__ import annotations

from collections.abc import Callable

STYLES: dict[str, Callable[[str, str], str]] = {
    "bold": lambda letter, text: f"**{letter}**",
    "answer_tag": lambda letter, text: f"<answer>{letter}</answer>",
    "square_brackets": lambda letter, text: f"[{letter}]",
    "letter_comma_text": lambda letter, text: f"{letter}, {text}",
    "best_guess": lambda letter, text: f"Best guess: {letter}",
    "i_think": lambda letter, text: f"I think it's {letter}",
    "option_text": lambda letter, text: text,
    "sentence_with_text": lambda letter, text: f"In the video the answer is clearly {text}.",
    "bare": lambda letter, text: letter,
    "bare_period": lambda letter, text: f"{letter}.",
    "parenthesised": lambda letter, text: f"({letter})",
    "close_paren": lambda letter, text: f"{letter})",
    "answer_colon": lambda letter, text: f"Answer: {letter}",
    "the_answer_is": lambda letter, text: f"The answer is {letter}.",
    "correct_answer_paren": lambda letter, text: f"The correct answer is ({letter}).",
    "letter_dot_text": lambda letter, text: f"{letter}. {text}",
    "paren_letter_text": lambda letter, text: f"({letter}) {text}",
    "option_word": lambda letter, text: f"Option {letter}",
    "boxed": lambda letter, text: f"\\boxed{{{letter}}}",
    "i_choose": lambda letter, text: f"I choose option {letter}.",
    "lower_case": lambda letter, text: letter.lower(),
    "therefore": lambda letter, text: f"The object changes late in the clip. Therefore, {letter}.",
    "think_then_answer": lambda letter, text: f"<think>Looking at the frames...</think>{letter}",
    "postfix": lambda letter, text: f"{letter} is the correct answer.",
    "final_answer": lambda letter, text: f"Final answer: {letter}",
    "chinese": lambda letter, text: f"答案：{letter}",
    "special_token": lambda letter, text: f"{letter}<|im_end|>",
    "role_prefix": lambda letter, text: f"Assistant: {letter}",
}
assert len(STYLES) == 28

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def styled_response(position: int, options: list[str], answer: int) -> str:
    """The response of the style model to the ``position``-th document: style ``position % 28``;
    the gold option for two documents out of three, a wrong one for the third (so scores are not 100%)."""
    names = list(STYLES)
    style = STYLES[names[position % len(names)]]
    choice = answer if position % 3 != 2 else (answer + 1) % len(options)
    return style(LETTERS[choice], options[choice])
