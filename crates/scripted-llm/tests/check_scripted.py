"""Points the official `anthropic` and `openai` Python SDKs at the scripted
provider (its URL is the only argument) and checks what they make of its
answers: a streamed answer with tool calls and a whole one, for each API.
The turns it expects are those of `sdks.rs`, in order. Prints `ok`."""
import json
import sys

import anthropic
import openai

base = sys.argv[1]
ECHO = {"text": 'hi ü "quoted" {braces}'}
user = [{"role": "user", "content": "hello"}]

claude = anthropic.Anthropic(base_url=base, api_key="sk-ant-scripted", max_retries=0)
anthropic_tools = [{"name": "utils__echo", "description": "echo",
                    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}]
with claude.messages.stream(model="scripted-model", max_tokens=64, messages=user,
                            tools=anthropic_tools) as stream:
    texts = [text for text in stream.text_stream]
    message = stream.get_final_message()
assert len(texts) > 1, texts
assert message.stop_reason == "tool_use", message
assert [block.type for block in message.content] == ["text", "tool_use", "tool_use"], message
assert message.content[0].text == "Let me look.", message
assert (message.content[1].id, message.content[1].name, message.content[1].input) == \
    ("toolu_1", "utils__echo", ECHO), message
assert (message.content[2].id, message.content[2].input) == ("toolu_2", {}), message
assert (message.usage.input_tokens, message.usage.output_tokens) == (20, 9), message.usage
assert message.usage.cache_read_input_tokens == 4, message.usage

message = claude.messages.create(model="scripted-model", max_tokens=64, messages=user)
assert message.stop_reason == "end_turn" and message.content[0].text == "Plain answer.", message

gpt = openai.OpenAI(base_url=base + "/v1", api_key="sk-scripted", max_retries=0)
openai_tools = [{"type": "function", "function": {"name": "utils__echo", "description": "echo",
                 "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}}]
calls, finish, usage, content = {}, None, None, ""
for chunk in gpt.chat.completions.create(model="scripted-model", messages=user, tools=openai_tools,
                                         stream=True, stream_options={"include_usage": True}):
    if chunk.usage:
        usage = chunk.usage
    for choice in chunk.choices:
        finish = choice.finish_reason or finish
        content += choice.delta.content or ""
        for call in choice.delta.tool_calls or []:
            entry = calls.setdefault(call.index, {"id": None, "name": None, "arguments": ""})
            entry["id"] = call.id or entry["id"]
            if call.function:
                entry["name"] = call.function.name or entry["name"]
                entry["arguments"] += call.function.arguments or ""
assert finish == "tool_calls", finish
assert content == "Let me look.", content
assert [(calls[i]["id"], calls[i]["name"]) for i in sorted(calls)] == \
    [("toolu_1", "utils__echo"), ("toolu_2", "utils__time")], calls
assert json.loads(calls[0]["arguments"]) == ECHO and json.loads(calls[1]["arguments"]) == {}, calls
assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (20, 9, 29), usage
assert usage.prompt_tokens_details.cached_tokens == 4, usage

completion = gpt.chat.completions.create(model="scripted-model", messages=user)
choice = completion.choices[0]
assert choice.finish_reason == "stop" and choice.message.content == "Plain answer.", completion
assert completion.usage.total_tokens == 19, completion.usage
print("ok")
