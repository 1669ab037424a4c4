# install.mk - `make install` and `make uninstall`, honouring PREFIX (default
# /usr/local), DESTDIR (a staging root put before every path) and the
# directory variables below.  What goes where:
#   $(LIBDIR)/libuipc.so.$(UIPC_VERSION)     the library (soname libuipc.so.0)
#   $(LIBDIR)/libuipc.so.0 -> the above      what programs load at run time
#   $(LIBDIR)/libuipc.so -> libuipc.so.0     what -luipc links against
#   $(BINDIR)/uipc                           the command (below)
#   $(INCLUDEDIR)/uipc.h                     the API of include/uipc.h
#   $(PKGCONFIGDIR)/uipc.pc                  from uipc.pc.in
#   $(MANDIR)/man1/uipc.1, man7/uipc.7       from man/
#
# The installed uipc is not build/uipc: it is linked again, into
# $(B)/install/uipc, with the run path $ORIGIN/<LIBDIR relative to BINDIR>
# (so that it runs from BINDIR, and from a DESTDIR staging tree too), and its
# tools/run.c is compiled with LIBDIR and that relative path baked in, so that
# `uipc run` preloads the installed library (tools/run.c: find_library).
# The paths in effect are kept in $(B)/install/paths; a change of PREFIX or of
# a directory rebuilds what depends on them.

UIPC_VERSION = 0.1.0
# The major version is the soname's (-Wl,-soname,libuipc.so.0 in the Makefile's
# rule for $(B)/libuipc.so): change both together.
UIPC_SOMAJOR = 0

PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR       ?= $(PREFIX)/share/man
INSTALL      ?= install
# Refreshes the dynamic linker's cache after installing into the real root
# as root (not under DESTDIR); `make install LDCONFIG=:` skips it.
LDCONFIG     ?= ldconfig

UIPC_SONAME   = libuipc.so.$(UIPC_SOMAJOR)
UIPC_REALNAME = libuipc.so.$(UIPC_VERSION)
INST_B        = $(B)/install
# LIBDIR as seen from BINDIR ("../lib" for the defaults)
LIB_FROM_BIN  = $(shell realpath -m --relative-to='$(BINDIR)' '$(LIBDIR)')
INST_PATHS    = version=$(UIPC_VERSION) prefix=$(PREFIX) bindir=$(BINDIR) \
		libdir=$(LIBDIR) includedir=$(INCLUDEDIR) pkgconfigdir=$(PKGCONFIGDIR) \
		mandir=$(MANDIR) lib_from_bin=$(LIB_FROM_BIN)
MAN_PAGES     = man/uipc.1 man/uipc.7

# The build tree's uipc needs the soname too: build/uipc, linked against
# build/libuipc.so, asks the dynamic linker for libuipc.so.0 ($ORIGIN).
$(B)/libuipc.so.0: $(B)/libuipc.so
	ln -sf libuipc.so $@

all: $(B)/libuipc.so.0
$(B)/uipc: $(B)/libuipc.so.0

# Rewritten only when the paths change.  They must be absolute and free of
# blanks, quotes and ':' (an rpath or LD_PRELOAD entry cannot hold one).
$(INST_B)/paths: install-paths-check | $(INST_B)
	@echo '$(INST_PATHS)' | cmp -s - $@ || echo '$(INST_PATHS)' > $@

install-paths-check:
	@for d in '$(PREFIX)' '$(BINDIR)' '$(LIBDIR)' '$(INCLUDEDIR)' '$(PKGCONFIGDIR)' '$(MANDIR)'; do \
		case $$d in \
		/*) ;; \
		*) echo "install.mk: '$$d' is not an absolute path (PREFIX, BINDIR, LIBDIR, ...)" >&2; exit 1 ;; \
		esac; \
		case $$d in \
		*[[:space:]:\"\'\\]*) echo "install.mk: '$$d' contains a blank, ':', a quote or a backslash" >&2; exit 1 ;; \
		esac; \
	done

$(INST_B)/run.o: tools/run.c $(TOOL_HDRS) $(INST_B)/paths install.mk
	$(CC) $(CFLAGS) $(BASECFLAGS) -DUIPC_LIBDIR='"$(LIBDIR)"' \
		-DUIPC_LIBDIR_FROM_BIN='"$(LIB_FROM_BIN)"' -DUIPC_SONAME='"$(UIPC_SONAME)"' \
		-c $< -o $@

$(INST_B)/uipc: $(filter-out $(B)/tools/run.o,$(TOOL_OBJS)) $(INST_B)/run.o $(B)/libuipc.so \
		$(INST_B)/paths install.mk
	$(CC) $(CFLAGS) $(BASECFLAGS) -o $@ $(filter %.o,$^) -L$(B) -luipc \
		-Wl,-rpath,'$$ORIGIN/$(LIB_FROM_BIN)'

$(INST_B)/uipc.pc: uipc.pc.in $(INST_B)/paths install.mk
	sed -e 's|@PREFIX@|$(PREFIX)|g' \
	    -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|g' \
	    -e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|g' \
	    -e 's|@VERSION@|$(UIPC_VERSION)|g' $< > $@.tmp
	mv $@.tmp $@

$(INST_B):
	mkdir -p $@

install: all $(INST_B)/uipc $(INST_B)/uipc.pc
	$(INSTALL) -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(LIBDIR)' '$(DESTDIR)$(INCLUDEDIR)' \
		'$(DESTDIR)$(PKGCONFIGDIR)' '$(DESTDIR)$(MANDIR)/man1' '$(DESTDIR)$(MANDIR)/man7'
	$(INSTALL) -m 755 $(B)/libuipc.so '$(DESTDIR)$(LIBDIR)/$(UIPC_REALNAME)'
	ln -sfn $(UIPC_REALNAME) '$(DESTDIR)$(LIBDIR)/$(UIPC_SONAME)'
	ln -sfn $(UIPC_SONAME) '$(DESTDIR)$(LIBDIR)/libuipc.so'
	$(INSTALL) -m 755 $(INST_B)/uipc '$(DESTDIR)$(BINDIR)/uipc'
	$(INSTALL) -m 644 include/uipc.h '$(DESTDIR)$(INCLUDEDIR)/uipc.h'
	$(INSTALL) -m 644 $(INST_B)/uipc.pc '$(DESTDIR)$(PKGCONFIGDIR)/uipc.pc'
	$(INSTALL) -m 644 man/uipc.1 '$(DESTDIR)$(MANDIR)/man1/uipc.1'
	$(INSTALL) -m 644 man/uipc.7 '$(DESTDIR)$(MANDIR)/man7/uipc.7'
	@if [ -z '$(DESTDIR)' ] && [ "$$(id -u)" = 0 ]; then $(LDCONFIG) || true; fi

# Exactly the files install puts there; the directories stay (they may be
# shared with other packages, or have been there before).
uninstall: install-paths-check
	rm -f '$(DESTDIR)$(BINDIR)/uipc' \
		'$(DESTDIR)$(LIBDIR)/$(UIPC_REALNAME)' '$(DESTDIR)$(LIBDIR)/$(UIPC_SONAME)' \
		'$(DESTDIR)$(LIBDIR)/libuipc.so' '$(DESTDIR)$(INCLUDEDIR)/uipc.h' \
		'$(DESTDIR)$(PKGCONFIGDIR)/uipc.pc' \
		'$(DESTDIR)$(MANDIR)/man1/uipc.1' '$(DESTDIR)$(MANDIR)/man7/uipc.7'
	@if [ -z '$(DESTDIR)' ] && [ "$$(id -u)" = 0 ]; then $(LDCONFIG) || true; fi

.PHONY: install uninstall install-paths-check
