"""Development sessions: tests, features, smoke, lint, typecheck, docs, bench, asv."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests", "features", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", "--cov", *session.posargs)


@nox.session(python=["3.12", "3.13"])
def compat(session: nox.Session) -> None:
    # The other Pythons the package supports: the unit tests, without coverage (the
    # `tests` session measures it on the Python that runs nox).
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *session.posargs)


@nox.session
def features(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("python", "-m", "behave", "--format", "progress", "features", *session.posargs)


@nox.session
def smoke(session: nox.Session) -> None:
    # The Robot Framework suite drives the installed `toolcycle` command; its log and
    # report go to build/robot, which git ignores.
    session.install("-e", ".[dev]")
    session.run(
        "python", "-m", "robot", "--outputdir", "build/robot", *session.posargs, "tests/smoke"
    )


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.17,<0.18")  # the range the dev extra pins
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    # The benchmarks import the peer libraries they compare against (extra `bench`).
    session.install("-e", ".[dev,bench]")
    session.run("mypy", "--strict", "src", "tests/typing/api.py", "benchmarks")


@nox.session
def docs(session: nox.Session) -> None:
    session.install("-e", ".[docs]")
    session.run("mkdocs", "build", "--strict", "--site-dir", "site")


@nox.session
def bench(session: nox.Session) -> None:
    # The baselines need the MCP SDK, a stdio MCP server and skills-ref (the dev extra)
    # and the peer frameworks and matplotlib (the bench extra).
    session.install("-e", ".[dev,bench]")
    session.run("python", "-m", "benchmarks", *session.posargs)


@nox.session
def asv(session: nox.Session) -> None:
    # The asv suite (asv.conf.json, benchmarks/asv/). `nox -s asv` times this checkout
    # once, quickly; `nox -s asv -- continuous main HEAD` compares two commits, and any
    # other asv command line works the same way. asv asks once per machine what the
    # machine is: answer with its defaults when nobody has yet.
    session.install("-e", ".[bench]")
    if not (Path.home() / ".asv-machine.json").exists():
        session.run("asv", "machine", "--yes")
    session.run("asv", *(session.posargs or ("run", "--python=same", "--quick")))
