// SPDX-License-Identifier: BSD-2-Clause
/*
 * The answer of the integrity table's slot 1, which NVIDIA's runtime checks
 * before it uses a driver: an HMAC over MD2 (RFC 2104 with RFC 1319's hash,
 * 16-byte blocks) with a fixed key, of this process, the tables and the
 * devices.  The runtime computes the same on its side, so a driver whose
 * answer differs is refused (cudaErrorSoftwareValidityNotEstablished).
 * Test code.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fakes/fake_driver/fake_driver.h"

/* RFC 1319's permutation of 0..255 built from the digits of pi. */
static const unsigned char md2_s[256] = {
	0x29, 0x2e, 0x43, 0xc9, 0xa2, 0xd8, 0x7c, 0x01, 0x3d, 0x36, 0x54, 0xa1,
	0xec, 0xf0, 0x06, 0x13, 0x62, 0xa7, 0x05, 0xf3, 0xc0, 0xc7, 0x73, 0x8c,
	0x98, 0x93, 0x2b, 0xd9, 0xbc, 0x4c, 0x82, 0xca, 0x1e, 0x9b, 0x57, 0x3c,
	0xfd, 0xd4, 0xe0, 0x16, 0x67, 0x42, 0x6f, 0x18, 0x8a, 0x17, 0xe5, 0x12,
	0xbe, 0x4e, 0xc4, 0xd6, 0xda, 0x9e, 0xde, 0x49, 0xa0, 0xfb, 0xf5, 0x8e,
	0xbb, 0x2f, 0xee, 0x7a, 0xa9, 0x68, 0x79, 0x91, 0x15, 0xb2, 0x07, 0x3f,
	0x94, 0xc2, 0x10, 0x89, 0x0b, 0x22, 0x5f, 0x21, 0x80, 0x7f, 0x5d, 0x9a,
	0x5a, 0x90, 0x32, 0x27, 0x35, 0x3e, 0xcc, 0xe7, 0xbf, 0xf7, 0x97, 0x03,
	0xff, 0x19, 0x30, 0xb3, 0x48, 0xa5, 0xb5, 0xd1, 0xd7, 0x5e, 0x92, 0x2a,
	0xac, 0x56, 0xaa, 0xc6, 0x4f, 0xb8, 0x38, 0xd2, 0x96, 0xa4, 0x7d, 0xb6,
	0x76, 0xfc, 0x6b, 0xe2, 0x9c, 0x74, 0x04, 0xf1, 0x45, 0x9d, 0x70, 0x59,
	0x64, 0x71, 0x87, 0x20, 0x86, 0x5b, 0xcf, 0x65, 0xe6, 0x2d, 0xa8, 0x02,
	0x1b, 0x60, 0x25, 0xad, 0xae, 0xb0, 0xb9, 0xf6, 0x1c, 0x46, 0x61, 0x69,
	0x34, 0x40, 0x7e, 0x0f, 0x55, 0x47, 0xa3, 0x23, 0xdd, 0x51, 0xaf, 0x3a,
	0xc3, 0x5c, 0xf9, 0xce, 0xba, 0xc5, 0xea, 0x26, 0x2c, 0x53, 0x0d, 0x6e,
	0x85, 0x28, 0x84, 0x09, 0xd3, 0xdf, 0xcd, 0xf4, 0x41, 0x81, 0x4d, 0x52,
	0x6a, 0xdc, 0x37, 0xc8, 0x6c, 0xc1, 0xab, 0xfa, 0x24, 0xe1, 0x7b, 0x08,
	0x0c, 0xbd, 0xb1, 0x4a, 0x78, 0x88, 0x95, 0x8b, 0xe3, 0x63, 0xe8, 0x6d,
	0xe9, 0xcb, 0xd5, 0xfe, 0x3b, 0x00, 0x1d, 0x39, 0xf2, 0xef, 0xb7, 0x0e,
	0x66, 0x58, 0xd0, 0xe4, 0xa6, 0x77, 0x72, 0xf8, 0xeb, 0x75, 0x4b, 0x0a,
	0x31, 0x44, 0x50, 0xb4, 0x8f, 0xed, 0x1f, 0x1a, 0xdb, 0x99, 0x8d, 0x33,
	0x9f, 0x11, 0x83, 0x14,
};

struct md2 {
	unsigned char x[48];	/* state, block, state ^ block */
	unsigned char c[16];	/* checksum */
	unsigned char block[16];
	unsigned int n;		/* bytes in block */
	unsigned char l;	/* last checksum byte */
};

static void md2_init(struct md2 *m)
{
	memset(m, 0, sizeof(*m));
}

static void md2_compress(struct md2 *m)
{
	unsigned char t = 0;

	for (int j = 0; j < 16; j++) {
		m->x[16 + j] = m->block[j];
		m->x[32 + j] = m->x[j] ^ m->block[j];
		m->c[j] ^= md2_s[m->block[j] ^ m->l];
		m->l = m->c[j];
	}
	for (int j = 0; j < 18; j++) {
		for (int k = 0; k < 48; k++)
			t = m->x[k] ^= md2_s[t];
		t = (unsigned char)(t + j);
	}
}

static void md2_update(struct md2 *m, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len--) {
		m->block[m->n++] = *p++;
		if (m->n == 16) {
			md2_compress(m);
			m->n = 0;
		}
	}
}

static void md2_final(struct md2 *m, unsigned char out[16])
{
	unsigned char pad = (unsigned char)(16 - m->n), c[16];

	for (unsigned int i = 0; i < pad; i++)
		md2_update(m, &pad, 1);
	memcpy(c, m->c, sizeof(c));
	md2_update(m, c, sizeof(c));
	memcpy(out, m->x, 16);
}

/*
 * What the hash covers, in this order and layout (x86-64): the driver's
 * version, the version the runtime asked with, process and thread ids,
 * where the runtime's two tables and the checking function are, the time
 * the runtime passed; then one record per device.
 */
struct integrity_input {
	uint32_t driver_version;
	uint32_t version;
	uint32_t pid;
	uint32_t tid;		/* pthread_self(), truncated */
	const void *cudart_table;
	const void *integrity_table;
	const void *fn_address;
	uint64_t unix_seconds;
};

struct integrity_device {
	unsigned char uuid[16];
	int32_t pci_domain;
	int32_t pci_bus;
	int32_t pci_device;
};

_Static_assert(sizeof(struct integrity_input) == 48, "integrity input is 48 bytes");
_Static_assert(sizeof(struct integrity_device) == 28, "integrity device record is 28 bytes");

/* The HMAC key, one MD2 block. */
static const unsigned char integrity_key[16] = {
	0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
	0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f,
};

static void hmac_md2(const struct integrity_input *in, unsigned char out[16])
{
	unsigned char pad[16], inner[16];
	struct integrity_device d;
	struct md2 m;

	md2_init(&m);
	for (int i = 0; i < 16; i++)
		pad[i] = integrity_key[i] ^ 0x36;
	md2_update(&m, pad, sizeof(pad));
	md2_update(&m, in, sizeof(*in));
	for (CUdevice dev = 0; dev < fd_device_count(); dev++) {
		memset(&d, 0, sizeof(d));
		fd_device_uuid(dev, d.uuid);
		fd_device_pci(dev, &d.pci_domain, &d.pci_bus, &d.pci_device);
		md2_update(&m, &d, sizeof(d));
	}
	md2_final(&m, inner);

	md2_init(&m);
	for (int i = 0; i < 16; i++)
		pad[i] = integrity_key[i] ^ 0x5c;
	md2_update(&m, pad, sizeof(pad));
	md2_update(&m, inner, sizeof(inner));
	md2_final(&m, out);
}

static int wrong_on_request(void)
{
	const char *s = getenv("FAKE_CUDA_INTEGRITY");

	return s && strcmp(s, "wrong") == 0;
}

void fd_integrity_hash(uint32_t version, uint64_t unix_seconds, const void *integrity_table,
		       const void *cudart_table, const void *fn_address, uint64_t out[2])
{
	struct integrity_input in;
	unsigned char h[16];

	/* Versions ending in 0 and 1 expect fixed answers, not a hash. */
	switch (version % 10) {
	case 0:
		out[0] = 0x3341181c03cb675cull;
		out[1] = 0x8ed383aa1f4cd1e8ull;
		return;
	case 1:
		out[0] = 0x1841181c03cb675cull;
		out[1] = 0x8ed383aa1f4cd1e8ull;
		return;
	}
	memset(&in, 0, sizeof(in));
	in.driver_version = FD_DRIVER_VERSION;
	in.version = version;
	in.pid = (uint32_t)getpid();
	in.tid = (uint32_t)pthread_self();
	in.cudart_table = cudart_table;
	in.integrity_table = integrity_table;
	in.fn_address = fn_address;
	in.unix_seconds = unix_seconds;
	hmac_md2(&in, h);
	/* $FAKE_CUDA_INTEGRITY=wrong: one bit off, to show the runtime checks it. */
	if (wrong_on_request())
		h[15] ^= 1;
	memcpy(out, h, 16);
}
