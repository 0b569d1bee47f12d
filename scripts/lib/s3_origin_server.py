#!/usr/bin/env python3
"""An S3 server for the tests of S3 origins: moto on 127.0.0.1, one bucket, given files.

Run with the interpreter of the test venv (scripts/lib/install-deps.sh makes it):
    $CACHEFS_TEST_VENV/bin/python scripts/lib/s3_origin_server.py \\
        --bucket photos [--upload DIR [--prefix pre/]] [--auth [--session]] [--log FILE]
        [--until-stdin-closes]

Once the bucket and files are in place it prints one JSON line on stdout and serves until
SIGTERM or SIGINT (or, with --until-stdin-closes, until its standard input closes, so a test
that dies takes the server with it):
    {"endpoint": "http://127.0.0.1:PORT", "port": PORT, "bucket": ..., "region": "us-east-1",
     "access_key_id": ..., "secret_access_key": ...}

moto checks no signature by default. With --auth it makes an IAM user allowed s3:*, prints
that user's keys, then turns moto's checks on: a request signed with another secret gets 403
SignatureDoesNotMatch, an unknown access key 403 InvalidAccessKeyId. Without --auth the keys
printed are placeholders and any signature is accepted. With --session it also assumes a role
allowed s3:* and prints temporary keys: "session_access_key_id", "session_secret_access_key",
"session_token" (signed without the token: 403 InvalidAccessKeyId; a wrong token: 400
InvalidToken). moto does not check the request's date against its clock.

--upload puts every file under DIR in the bucket, its key PREFIX + its path relative to DIR.
--log appends "METHOD URI" (and " RANGE" for a ranged request) for each S3 request served after the setup, the URI as sent
(still percent-encoded), for tests that count requests.
"""

import argparse
import json
import os
import signal
import sys
import threading
import urllib.request

import boto3
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

REGION = "us-east-1"
ALLOW_S3 = json.dumps({"Version": "2012-10-17",
                       "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]})


def serve(log_path, logging_on):
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def logged(environ, start_response):
        uri = environ.get("REQUEST_URI") or environ.get("RAW_URI", "")
        if log_path and logging_on.is_set() and not uri.startswith("/moto-api"):
            with lock, open(log_path, "a") as log:
                ranged = f" {environ['HTTP_RANGE']}" if environ.get("HTTP_RANGE") else ""
                log.write(f"{environ['REQUEST_METHOD']} {uri}{ranged}\n")
        return app(environ, start_response)

    server = make_server("127.0.0.1", 0, logged, threaded=True, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--upload", metavar="DIR")
    parser.add_argument("--prefix", default="")
    parser.add_argument("--auth", action="store_true")
    parser.add_argument("--session", action="store_true")
    parser.add_argument("--log", metavar="FILE")
    parser.add_argument("--until-stdin-closes", action="store_true")
    args = parser.parse_args()

    logging_on = threading.Event()
    server = serve(args.log, logging_on)
    endpoint = f"http://127.0.0.1:{server.server_port}"
    setup = {"endpoint_url": endpoint, "region_name": REGION,
             "aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
    s3 = boto3.client("s3", **setup)
    s3.create_bucket(Bucket=args.bucket)
    if args.upload:
        for directory, _, files in os.walk(args.upload):
            for name in files:
                path = os.path.join(directory, name)
                s3.upload_file(path, args.bucket, args.prefix + os.path.relpath(path, args.upload))

    keys = {"access_key_id": "placeholder", "secret_access_key": "placeholder"}
    if args.auth:
        iam = boto3.client("iam", **setup)
        iam.create_user(UserName="cachefs")
        iam.put_user_policy(UserName="cachefs", PolicyName="s3", PolicyDocument=ALLOW_S3)
        created = iam.create_access_key(UserName="cachefs")["AccessKey"]
        keys = {"access_key_id": created["AccessKeyId"], "secret_access_key": created["SecretAccessKey"]}
        if args.session:
            iam.create_role(RoleName="cachefs-role", AssumeRolePolicyDocument=json.dumps({
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
            }))
            iam.put_role_policy(RoleName="cachefs-role", PolicyName="s3", PolicyDocument=ALLOW_S3)
            role = iam.get_role(RoleName="cachefs-role")["Role"]["Arn"]
            session = boto3.client("sts", **setup).assume_role(RoleArn=role, RoleSessionName="cachefs")["Credentials"]
            keys.update({"session_access_key_id": session["AccessKeyId"],
                         "session_secret_access_key": session["SecretAccessKey"],
                         "session_token": session["SessionToken"]})
        # From now on every request must carry a valid signature by a known key.
        urllib.request.urlopen(urllib.request.Request(endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                                      headers={"Content-Type": "text/plain"}))

    logging_on.set()
    print(json.dumps({"endpoint": endpoint, "port": server.server_port, "bucket": args.bucket,
                      "region": REGION, **keys}), flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if args.until_stdin_closes:
        threading.Thread(target=lambda: (sys.stdin.buffer.read(), stop.set()), daemon=True).start()
    stop.wait()
    server.shutdown()


if __name__ == "__main__":
    main()
