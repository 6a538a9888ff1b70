"""Amazon Bedrock InvokeModelWithResponseStream: the ``bedrock-invoke`` wire API."""

from ...plugins.wire_api import WireApi

API = WireApi(
    package=__name__,  # where its parts are
    id="bedrock-invoke",
    name="invoke-with-response-stream",
    label="InvokeModelWithResponseStream",
    provider="bedrock",
    base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
    path="/model/{model}/invoke-with-response-stream",
    key_env=("AWS_BEARER_TOKEN_BEDROCK",),
    model_in_path=r"/model/([^/]+)/invoke-with-response-stream$",
    stream_in_path=True,
    provider_aliases=("aws", "amazon-bedrock", "aws-bedrock", "amazon"),
    aliases=("invokemodelwithresponsestream", "bedrock-invoke-model"),
    sigv4="bedrock",
)
