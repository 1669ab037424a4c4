# install.mk - the library's soname, and (to come) `make install`.

# The build tree's uipc needs the soname too: build/uipc, linked against
# build/libuipc.so (soname libuipc.so.0, see the Makefile's rule), asks the
# dynamic linker for libuipc.so.0 next to itself ($ORIGIN).
$(B)/libuipc.so.0: $(B)/libuipc.so
	ln -sf libuipc.so $@

all: $(B)/libuipc.so.0
$(B)/uipc: $(B)/libuipc.so.0
