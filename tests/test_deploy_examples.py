"""The Databricks job and the EMR requests in ``examples/`` are what those services accept, checked against
their own SDKs' models: the Databricks SDK's job settings, botocore's input shapes."""

import json

import botocore.session
import pytest
from botocore.validate import ParamValidator
from databricks.sdk.service.jobs import JobSettings

from dirtiness.config import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples"


def load(path: str):
    return json.loads((EXAMPLES / path).read_text())


@pytest.mark.parametrize("path", ["databricks/job.json", "databricks/job-serverless.json"])
def test_databricks_jobs_are_job_settings(path):
    job = load(path)
    # from_dict drops what the model does not know: a misspelt or made-up field would not come back
    assert JobSettings.from_dict(job).as_dict() == job
    task, = job["tasks"]
    assert task["python_wheel_task"]["entry_point"] == "dirtiness"  # the wheel's console script
    assert task["python_wheel_task"]["parameters"][:1] == ["run"]
    assert "{{job.run_id}}" in task["python_wheel_task"]["parameters"]  # a retry replaces its rows


@pytest.mark.parametrize("service, operation, params", [
    ("emr", "AddJobFlowSteps", lambda: {"JobFlowId": "j-EXAMPLE", "Steps": load("emr/steps.json")}),
    ("emr-serverless", "StartJobRun", lambda: load("emr/serverless-start-job-run.json")),
])
def test_emr_requests_match_botocore_shapes(service, operation, params):
    shape = botocore.session.get_session().get_service_model(service).operation_model(operation).input_shape
    report = ParamValidator().validate(params(), shape)
    assert not report.has_errors(), report.generate_report()


def test_the_emr_step_submits_the_job_with_delta():
    args = load("emr/steps.json")[0]["HadoopJarStep"]["Args"]
    assert args[0] == "spark-submit" and any(a.endswith("compute_dirty.py") for a in args)
    assert "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension" in args
