#!/bin/sh
# What bubblewrap prints where the kernel does not allow unprivileged user namespaces.
echo "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'." >&2
exit 1
