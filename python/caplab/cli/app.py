"""The `caplab` command group. Each command lives in its group's module and is imported only when
it runs, so `caplab load` does not pay for pandas, scipy and the report's plotting libraries."""

from __future__ import annotations

import importlib
import signal
from types import FrameType

import click

from caplab import __version__

COMMANDS = {
    "load": "caplab.cli.load:load_command",
    "run": "caplab.cli.run:run_command",
    "demo": "caplab.cli.run:demo_command",
    "studies": "caplab.cli.studies:studies_command",
    "find-capacity": "caplab.cli.capacity:find_capacity_command",
    "failover": "caplab.cli.failover:failover_command",
    "fit-usl": "caplab.cli.capacity:fit_usl_command",
    "ls": "caplab.cli.store:ls_command",
    "show": "caplab.cli.store:show_command",
    "export": "caplab.cli.store:export_command",
    "report": "caplab.cli.report:report_command",
    "systems": "caplab.cli.systems:systems_command",
    "cluster": "caplab.cli.cluster:cluster_command",
    "dashboard": "caplab.cli.dashboard:dashboard_command",
    "compare": "caplab.cli.compare:compare_command",
}
"""Command name → ``module:attribute`` of its click command, named for the command with
``_command`` (``find-capacity`` → ``find_capacity_command``); the work behind it, returning the
exit code, is ``cmd_<name>``."""


SUMMARIES = {
    "load": "Drive load at a URL (HTTP(S), TCP, TLS, PostgreSQL, SMTP, IMAP) and measure it.",
    "run": "Run a study file and write its sizing report.",
    "demo": "Run the BizTalk scale-out study on msgbus and write its sizing report.",
    "studies": "The built-in studies: each reproduces a seed paper's capacity study on real software.",
    "find-capacity": "Find the highest load URL sustains within the SLO, and what limits it.",
    "failover": "Run a failover under load at URL and measure what the clients saw of it.",
    "fit-usl": "Fit the Universal Scalability Law to CSV_FILE.",
    "ls": "List the studies in the results store, oldest first.",
    "show": "Show a study: STUDY is an id, a name or `latest`.",
    "export": "Export a study's cells, trials, intervals and resource samples.",
    "report": "Write the sizing report of a study.",
    "systems": "The reference systems caplab ships: real servers to size, with built-in studies.",
    "cluster": "Ray clusters for load agents.",
    "dashboard": "Print the Grafana dashboard (JSON to import) over what --metrics-port serves.",
    "compare": "Compare two stored studies cell by cell: BASELINE and CANDIDATE are ids, names or `latest`.",
}
"""Each command's line in ``caplab --help``, kept here so that listing them imports none of them
(the report's and the store's commands bring pandas and scipy: 1.7 s of CPU to print a help).
Each is the start of its command's own help (a test holds them to it)."""


class LazyGroup(click.Group):
    """A group whose commands are imported by name on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their summaries, from the table: nothing imported."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, SUMMARIES[name]) for name in sorted(COMMANDS)])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="caplab")
def main() -> None:
    """caplab turns load tests into capacity plans.

    \b
    Drive load at a system and measure it correctly:
      caplab load http://127.0.0.1:8080/ --rate 2000 --duration 30s
    Run a study (a matrix of configurations, each searched for its capacity) and its report:
      caplab run study.yaml          caplab demo --quick
    """
    signal.signal(signal.SIGTERM, _stop_as_ctrl_c)


def _stop_as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """SIGTERM — ``kill``, a CI job's timeout, a scheduler — stops caplab as Ctrl-C does: the
    finished results kept, the cell's hardware and SUT removed, exit 130. Left to its default it
    would end the process at once and leave cgroups, volumes and servers behind."""
    raise KeyboardInterrupt
