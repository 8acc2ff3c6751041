# SPDX-License-Identifier: BSD-2-Clause
#
# The live web page: exporter/web/index.html is embedded into zernel-exporter
# as $(BUILD)/exporter/web_assets.c (web_index_html[], web_index_html_len;
# see exporter/web/web_assets.h), plus exporter/web/page.c which fills in the
# WebSocket port.  Included from the main Makefile:
#   include exporter/web/web.mk
# od(1) from coreutils does the conversion, so no extra build dependency.

WEB_SRCS   := $(wildcard exporter/web/*.html)
WEB_ASSETS := $(BUILD)/exporter/web_assets.c
WEB_OBJS   := $(BUILD)/exporter/web_assets.o $(BUILD)/exporter/web/page.o

$(WEB_ASSETS): $(WEB_SRCS) exporter/web/web.mk
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q){ echo '/* Generated from exporter/web/index.html by exporter/web/web.mk; do not edit. */'; \
	  echo '#include "exporter/web/web_assets.h"'; \
	  echo 'const unsigned char web_index_html[] = {'; \
	  od -An -v -tx1 exporter/web/index.html | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00 };'; \
	  echo "const unsigned int web_index_html_len = $$(wc -c < exporter/web/index.html);"; \
	} > $@.tmp && mv $@.tmp $@

$(BUILD)/exporter/web_assets.o: $(WEB_ASSETS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

# Extra prerequisites: the link recipes use $^, which includes these.
$(EXPORTER): $(WEB_OBJS)
$(call test_runner,exporter): $(WEB_OBJS)
