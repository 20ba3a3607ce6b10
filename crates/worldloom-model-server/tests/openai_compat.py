"""Drives a running `worldloom serve-model` with the official `openai` package.

Usage: python3 openai_compat.py BASE_URL MODEL_ID
Exits non-zero with a message when an answer is not what the copy engine
must give for the chat below.
"""

import sys

from openai import OpenAI


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0, timeout=30)

    served = [m.id for m in client.models.list().data]
    assert served == [model], f"models.list gave {served}"

    messages = [
        {"role": "system", "content": "You simulate a shell."},
        {"role": "user", "content": "ls"},
        {"role": "assistant", "content": "notes.txt"},
        {"role": "user", "content": "touch todo.txt"},
    ]
    expected = "<predicted_observation>\nnotes.txt\n</predicted_observation>"

    reply = client.chat.completions.create(model=model, messages=messages, max_tokens=64, temperature=0.6)
    content = reply.choices[0].message.content
    assert content == expected, f"non-streaming content {content!r}"
    assert reply.choices[0].finish_reason == "stop", reply.choices[0].finish_reason
    assert reply.usage is not None, "no usage"

    pieces = []
    finish = None
    usage_seen = False
    stream = client.chat.completions.create(
        model=model, messages=messages, max_tokens=64, stream=True, stream_options={"include_usage": True}
    )
    for chunk in stream:
        if chunk.usage is not None:
            usage_seen = True
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
            if choice.finish_reason:
                finish = choice.finish_reason
    assert "".join(pieces) == expected, f"streamed content {''.join(pieces)!r}"
    assert finish == "stop", finish
    assert usage_seen, "no usage chunk"

    try:
        client.chat.completions.create(model="not-" + model, messages=messages)
    except Exception as err:  # the package raises NotFoundError
        assert type(err).__name__ == "NotFoundError", type(err).__name__
    else:
        raise AssertionError("an unknown model was accepted")

    print("openai package: OK")


if __name__ == "__main__":
    main()
