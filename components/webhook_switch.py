"""The switch of the default injection path and validation from one istiod to another."""

from __future__ import annotations

import json

import pulumi

from components import PACKAGE, REPO
from components.commands import step
from components.control_plane import IstioControlPlane
from components.objects import child_options, declare, resource_name
from live import cli
from migration.args import WebhookSwitchArgs
from migration.owners import fields_owned_elsewhere
from migration.webhooks import called_service


class WebhookSwitch(pulumi.ComponentResource):
    """Adopts the default injector and validator and points them at the new istiod: one write each (the injector's
    also removes a canary's webhooks), so every namespace has exactly one injector at every instant. Retained on
    delete: destroying this stack must never leave namespaces with no injector (rolling back points them at the old
    istiod again).

    A stack that already holds those webhooks in its control plane (a `legacy` stack that built or adopted the mesh,
    now rolling back) knows each under that component: the alias makes the switch the same resource, updated in
    place, where a new one would be imported and the old one deleted at the end of the update, leaving every
    namespace without its injector."""

    def __init__(self, name: str, args: WebhookSwitchArgs, opts: pulumi.ResourceOptions | None = None,
                 held_by: IstioControlPlane | None = None, canary: pulumi.Resource | None = None):
        super().__init__(f"{PACKAGE}:migration:WebhookSwitch", name, None, opts)
        hooks = [hook for hook in (args.injector, args.validator) if hook]
        # A canary's webhooks on the default injector (live.canary) go in the write that switches it: live.fold
        # makes that write when they are there, before the resource's own (which would keep webhooks it does not
        # declare). It runs again whenever the switch sends the injector elsewhere, whenever the canary step ran
        # again (a new id: its webhooks may be back), and on the way back whenever it finds another canary. Only
        # where a canary may be there: it costs the switch a process start (~0.8 s on the bench, 2026-12-07).
        folds = []
        if args.injector and args.fold:
            triggers = ["/".join(called_service(args.injector["webhooks"][0])), *args.live_canary,
                        *([canary.id] if canary else [])]
            folds.append(step(f"{name}-fold", cli.Fold.on(args.target).command_line(), triggers, args.target,
                              child_options(self, opts), directory=str(REPO),
                              stdin=json.dumps(args.injector, sort_keys=True)))
        self.webhooks = [declare(name, hook, child_options(
            self, opts, depends_on=folds, import_=hook["metadata"]["name"], retain_on_delete=True,
            ignore_changes=fields_owned_elsewhere(hook) or None,
            aliases=[pulumi.Alias(name=resource_name(held_by.prefix, hook), parent=held_by)] if held_by else None))
            for hook in hooks]
        self.register_outputs({"switched": [h["metadata"]["name"] for h in hooks]})
