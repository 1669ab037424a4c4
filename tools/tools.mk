# tools/tools.mk - the uipc command (owned by the command work)
# build/uipc from tools/*.c, linked against build/libuipc.so and finding it
# at run time next to itself ($ORIGIN).
TOOL_SRCS := $(sort $(wildcard tools/*.c))
TOOL_OBJS := $(TOOL_SRCS:tools/%.c=$(B)/tools/%.o)
TOOL_HDRS := $(wildcard tools/*.h) include/uipc.h

$(B)/tools/%.o: tools/%.c $(TOOL_HDRS) | $(B)/tools
	$(CC) $(CFLAGS) $(BASECFLAGS) -c $< -o $@

$(B)/uipc: $(TOOL_OBJS) $(B)/libuipc.so
	$(CC) $(CFLAGS) $(BASECFLAGS) -o $@ $(TOOL_OBJS) -L$(B) -luipc -Wl,-rpath,'$$ORIGIN'

$(B)/tools:
	mkdir -p $@
