"""`aiscientist sandbox build-image|clean`: the docker backend's image and leftovers."""

from __future__ import annotations

import argparse
from pathlib import Path

from aiscientist.util.console import make_console

console = make_console(stderr=True, soft_wrap=True)

HELP = "build the docker sandbox's run image; clean up orphaned containers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="sandbox_command", required=True, metavar="{build-image,clean}")
    build = sub.add_parser("build-image", help="import the docker run image into the local engine (no registry needed)")
    build.add_argument(
        "--tag", default=None, help="image name (default: aiscientist-run:latest, what --sandbox docker uses)"
    )
    build.add_argument(
        "--rootfs",
        type=Path,
        default=None,
        help="a complete root filesystem folder to import instead of mounting the host's runtime at run time",
    )
    sub.add_parser("clean", help="remove this host's sandbox containers whose owner process is gone")


def run(args: argparse.Namespace) -> int:
    from aiscientist.sandbox.docker import DockerUnavailable, connect, remove_orphans
    from aiscientist.sandbox.image import DEFAULT_IMAGE, build_image

    try:
        client = connect()
    except DockerUnavailable as err:
        console.print(f"[red]error:[/red] {err}")
        return 2
    if args.sandbox_command == "clean":
        removed = remove_orphans(client)
        console.print(f"removed {len(removed)} orphaned sandbox container(s)")
        return 0
    if args.rootfs is not None and not args.rootfs.is_dir():
        console.print(f"[red]error:[/red] --rootfs {args.rootfs}: not a folder")
        return 2
    try:
        tag = build_image(client, args.tag or DEFAULT_IMAGE, args.rootfs)
    except ValueError as err:
        console.print(f"[red]error:[/red] --rootfs: {err}")
        return 2
    image = client.images.get(tag)
    console.print(
        f"built {tag} ({image.short_id}, {image.attrs['Size'] / 1e6:.1f} MB); use it with --sandbox docker"
        + (f" --set sandbox.image={tag}" if args.tag else "")
    )
    return 0
