#!/bin/sh
# A bubblewrap whose sandbox forge may not enter (as with a setuid one, whose namespaces belong
# to root): it reports a process of the caller's own namespaces, its own `sleep`, as the sandbox.
while [ $# -gt 0 ]; do
    case $1 in
        --info-fd) info=$2; shift ;;
        --block-fd) block=$2; shift ;;
    esac
    shift
done
eval "sleep 600 $info>&- &"  # not holding --info-fd open: forge reads it to its end
sandbox=$!
printf '{\n    "child-pid": %d\n}\n' "$sandbox" >&"$info"
eval "exec $info>&-"
read -r _ <&"$block"
wait "$sandbox"
