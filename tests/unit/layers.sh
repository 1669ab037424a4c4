# tests/unit/layers.sh - the layer rule of the library's objects, read with
# nm: calls go down only, entry -> ipc (and aio) -> core -> libc.
#
# layers_check reads lines "LAYER OBJECT" on stdin and prints one line per
# violation, "OBJECT (LAYER) references SYMBOL, defined in DEFINER (LAYER2)",
# for every undefined symbol of an object that an object of a layer it may
# not call defines.  (A lower layer that calls libc's close, mmap, ... by
# name would bind to entry/'s interposed ones: that shows up here too.)

# the layers LAYER may call
layers_allowed() {
	case $1 in
	core) echo "" ;;
	ipc|aio) echo "core" ;;
	entry) echo "core ipc aio" ;;
	*) echo "?" ;;
	esac
}

layers_check() {
	local list defs layer obj
	list=$(cat)
	# every global symbol an object defines: "SYMBOL LAYER OBJECT"
	defs=$(echo "$list" | while read -r layer obj; do
		nm -g --defined-only "$obj" | awk -v l="$layer" -v o="$obj" 'NF >= 3 { print $3, l, o }'
	done)
	echo "$list" | while read -r layer obj; do
		nm -u "$obj" | awk '{ print $NF }' | while read -r sym; do
			echo "$defs" | awk -v s="$sym" -v l="$layer" -v o="$obj" -v ok=" $(layers_allowed "$layer") " '
				$1 == s && $2 != l && index(ok, " " $2 " ") == 0 {
					printf "%s (%s) references %s, defined in %s (%s)\n", o, l, s, $3, $2
				}'
		done
	done
}
