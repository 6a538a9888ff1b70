"""The ``get_weather`` tool the clients and the tests offer a model, in each API's shape. The
clients run as scripts from this folder and import it by its bare name; the tests import
``tests.clients.weather_tool``."""

WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
    "required": ["city"],
}
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": WEATHER_PARAMETERS,
}
# Responses and Realtime: the function's fields beside its type
FLAT_TOOLS = [{"type": "function", **WEATHER_TOOL}]
# Chat Completions: the function under "function"
OPENAI_TOOLS = [{"type": "function", "function": WEATHER_TOOL}]
# Anthropic Messages: the schema as "input_schema"
ANTHROPIC_TOOLS = [
    {
        "name": WEATHER_TOOL["name"],
        "description": WEATHER_TOOL["description"],
        "input_schema": WEATHER_PARAMETERS,
    }
]
