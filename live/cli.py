"""The command line of each live command (`python -m live.<name>`), described once, as a frozen dataclass: a component
writes its step's command from it (command_line) and the command reads its argv back into it (from_argv, through a
parser made from the same fields), so a flag cannot change on one side only.

A field's place is its place on the command line, and a field left unset (None, a switch off) is not written: the
command lines are inputs of pulumi-command resources on existing stacks, where any change of them is a diff in
`pulumi preview`. Plain data: neither Pulumi nor a cluster client is imported here, so components/ and live/ both
import it cheaply."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import typing
from typing import Any, ClassVar, Sequence, TypeVar

from migration.target import KubeTarget

C = TypeVar("C", bound="Command")


def arg(help: str | None = None, *, default: Any = dataclasses.MISSING, choices: tuple[str, ...] | None = None,
        sep: str | None = None, positional: str | None = None) -> Any:
    """A field that is one argument, `--field-name VALUE` (required unless it has a default): a bool is a switch,
    `--field-name` alone; a tuple is one value joined by sep or, positional (named so in the usage), the values
    themselves, one or more."""
    return dataclasses.field(default=default, metadata={"help": help, "choices": choices, "sep": sep,
                                                        "positional": positional})


def _flag(field: dataclasses.Field) -> str:
    return "--" + field.name.replace("_", "-")


def _parsing(field: dataclasses.Field, hint: Any) -> dict[str, Any]:
    """add_argument's keywords for field, annotated hint: a value of `X | None` or `tuple[X, ...]` is parsed as X."""
    meta = field.metadata
    if hint is bool:
        return {"action": "store_true", "help": meta["help"]}
    scalar = next((t for t in typing.get_args(hint) if t not in (type(None), Ellipsis)), hint)
    options = {"help": meta["help"], "choices": meta["choices"], "type": scalar}
    if meta["positional"]:
        return {**options, "nargs": "+", "metavar": meta["positional"]}
    if meta["sep"]:
        options["type"] = lambda text: tuple(map(scalar, text.split(meta["sep"])))
    return {**options, **({"required": True} if field.default is dataclasses.MISSING else {"default": field.default})}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Command:
    """What every live command takes: the cluster it reads and acts on. A component always names the stack's
    resolved one (on); an operator running a command by hand may leave them out."""

    module: ClassVar[str]
    """`python -m live.<module>`."""
    kubeconfig: str | None = arg("default: KUBECONFIG, else ~/.kube/config", default=None)
    context: str | None = arg("default: the kubeconfig's current context", default=None)

    @classmethod
    def on(cls: type[C], target: KubeTarget, **fields: Any) -> C:
        """The command against target, with fields as its other arguments."""
        return cls(kubeconfig=target.kubeconfig, context=target.context, **fields)

    def _written(self) -> list[dataclasses.Field]:
        """The fields set: neither None nor a switch turned off."""
        return [f for f in dataclasses.fields(self)
                if (value := getattr(self, f.name)) is not None and value is not False]

    def argv(self) -> list[str]:
        """The arguments after `python -m live.<module>`."""
        argv: list[str] = []
        for field in self._written():
            value, sep = getattr(self, field.name), field.metadata["sep"]
            if field.metadata["positional"]:
                argv += value
            else:
                argv += [_flag(field)] if value is True else [_flag(field), sep.join(value) if sep else str(value)]
        return argv

    def command_line(self) -> str:
        """The shell command that runs it in this interpreter (a step runs it from the repository)."""
        return shlex.join([sys.executable, "-m", f"live.{self.module}", *self.argv()])

    @classmethod
    def parser(cls, doc: str | None = None) -> argparse.ArgumentParser:
        """The command's argparse parser; its help shows doc (the command's module docstring) as written."""
        parser = argparse.ArgumentParser(prog=f"python -m live.{cls.module}", description=doc,
                                         formatter_class=argparse.RawDescriptionHelpFormatter)
        hints = typing.get_type_hints(cls)
        for field in dataclasses.fields(cls):
            parser.add_argument(field.name if field.metadata["positional"] else _flag(field),
                                **_parsing(field, hints[field.name]))
        return parser

    @classmethod
    def from_argv(cls: type[C], argv: Sequence[str] | None = None, doc: str | None = None) -> C:
        """The command as argv (default: sys.argv[1:]) gives it; a wrong argv exits as argparse does, printing the
        usage (doc: as for parser)."""
        parsed = vars(cls.parser(doc).parse_args(argv))
        return cls(**{name: tuple(value) if isinstance(value, list) else value for name, value in parsed.items()})


@dataclasses.dataclass(frozen=True, kw_only=True)
class Analyze(Command):
    module: ClassVar[str] = "analyze"
    istio_namespace: str = arg("the namespace of the control plane being left")
    revision: str = arg("its istio.io/rev label")
    istioctl_version: str | None = arg("Istio version of the istioctl to run (istioctl-<version> or istioctl on PATH)",
                                       default=None)
    istioctl: str | None = arg("that istioctl's path (kf-istio-migrate:istioctl)", default=None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Canary(Command):
    """The canary phase or, put_back, the way back."""

    module: ClassVar[str] = "canary"
    put_back: bool = arg("the way back: every namespace an earlier release's canary relabelled to --revision "
                         "returns to the default injection path", default=False)
    istiod: str | None = arg(default=None)
    leaving: str | None = arg(default=None)
    revision: str = arg("the destination istiod's istio.io/rev")
    leaving_revision: str | None = arg(default=None)
    injector: str | None = arg("the default injector, whose one write makes the canary", default=None)
    namespaces: tuple[str, ...] = arg(default=(), sep=",")
    soak: int = arg(default=0)
    timeout: int = arg(default=0)
    limit: int = arg(default=0)
    wave: str | None = arg(default=None)
    istioctl_version: str | None = arg(default=None)
    istioctl: str | None = arg(default=None)

    PUT_BACK_READS: ClassVar[frozenset[str]] = frozenset({"kubeconfig", "context", "put_back", "revision"})
    """All the way back reads: the canary's own arguments (their defaults) are not written for it."""

    def _written(self) -> list[dataclasses.Field]:
        return [f for f in super()._written() if not self.put_back or f.name in self.PUT_BACK_READS]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fold(Command):
    """Before the switch: a canary's webhooks folded into the switch's one write (the declared injector on stdin)."""

    module: ClassVar[str] = "fold"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Disown(Command):
    module: ClassVar[str] = "disown"
    refs: tuple[str, ...] = arg(positional="REF")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Retire(Command):
    module: ClassVar[str] = "retire"
    revision: str = arg("the retired revision")
    namespace: str = arg("its control plane's namespace")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Evict(Command):
    module: ClassVar[str] = "evict"
    leaving: str = arg()
    istiod: str = arg()
    timeout: int = arg()
    unmanaged: str = arg(choices=("wait", "evict"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Rollout(Command):
    module: ClassVar[str] = "rollout"
    kubeconfig: str = arg("the kubeconfig of the stack's resolved cluster")
    context: str = arg("its context")
    wave: str = arg()
    limit: int = arg()
    leaving: str = arg()
    istiod: str = arg()
    timeout: int = arg()


@dataclasses.dataclass(frozen=True, kw_only=True)
class Verify(Command):
    module: ClassVar[str] = "verify"
    istiod: str = arg("the destination istiod, e.g. istiod-kf-1-30.istio-system.svc:15012")
    leaving: str = arg("the istiod being left, e.g. istiod.kubeflow.svc:15012")
    timeout: float = arg("seconds to keep re-checking before failing", default=0)
    revision: str = arg("the destination istiod's istio.io/rev label", default="default")
    leaving_revision: str = arg("the leaving istiod's istio.io/rev label", default="default")
    analysis_before: str | None = arg("`python -m live.analyze`'s output before the move (- for standard input): "
                                      "Error messages in it are not new", default=None)
    istioctl_version: str | None = arg("Istio version of the istioctl that asks the control planes "
                                       "(istioctl-<version> or istioctl on PATH); without it, pod specs alone decide",
                                       default=None)
    istioctl: str | None = arg("that istioctl's path (kf-istio-migrate:istioctl); alone, any istioctl (an "
                               "operator's check by hand)", default=None)
    require_live_view: bool = arg("fail while the live view cannot be had, instead of judging by pod specs alone",
                                  default=False)
