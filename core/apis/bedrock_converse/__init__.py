"""Amazon Bedrock ConverseStream: the ``bedrock-converse`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi(
    package=__name__,  # where its parts are
    id="bedrock-converse",
    name="converse-stream",
    label="ConverseStream",
    provider="bedrock",
    base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
    path="/model/{model}/converse-stream",
    key_env=("AWS_BEARER_TOKEN_BEDROCK",),
    more_routes=("/converse",),
    model_in_path=r"/model/([^/]+)/converse-stream$",
    stream_in_path=True,
    provider_aliases=("aws", "amazon-bedrock", "aws-bedrock", "amazon"),
    aliases=("bedrock", "converse", "conversestream"),
    sigv4="bedrock",
)
