// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fake driver's devices: $FAKE_CUDA_DEVICES (default 2) identical
 * Turing boards shaped like a Tesla T4, compute capability 7.5, the oldest
 * that CUDA 13's nvcc builds for by default (sm_75), so that the cubins it
 * embeds would run on them.  Test code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakes/fake_driver/fake_driver.h"

#define FD_TOTAL_MEM	(15ull << 30)	/* 15 GiB, as a 16 GB T4 reports */
#define FD_PCI_BUS0	0x3b

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int n_devices = 2;

static void count_read(void)
{
	const char *s = getenv("FAKE_CUDA_DEVICES");
	int n = s ? atoi(s) : 2;

	if (n >= 1 && n <= FD_MAX_DEVICES)
		n_devices = n;
}

int fd_device_count(void)
{
	pthread_once(&count_once, count_read);
	return n_devices;
}

int fd_valid_device(CUdevice dev)
{
	return dev >= 0 && dev < fd_device_count();
}

void fd_device_uuid(CUdevice dev, unsigned char uuid[16])
{
	/* Stable and distinct per device; version-4 shaped like NVIDIA's. */
	static const unsigned char base[16] = {
		0x7a, 0x65, 0x72, 0x6e, 0x65, 0x6c, 0x2d, 0x46,
		0x8a, 0x6b, 0x65, 0x2d, 0x47, 0x50, 0x55, 0x00,
	};

	memcpy(uuid, base, 16);
	uuid[15] = (unsigned char)dev;
}

int fd_device_pci(CUdevice dev, int *domain, int *bus, int *device)
{
	*domain = 0;
	*bus = FD_PCI_BUS0 + dev;
	*device = 0;
	return 0;
}

/* CUdevice_attribute values of a Tesla T4 (cuda.h numbering). */
struct attr {
	int id;
	int value;
};

static const struct attr attrs[] = {
	{ 1, 1024 }, { 2, 1024 }, { 3, 1024 }, { 4, 64 },		/* block limits */
	{ 5, 2147483647 }, { 6, 65535 }, { 7, 65535 },		/* grid limits */
	{ 8, 49152 }, { 9, 65536 }, { 10, 32 }, { 11, 2147483647 },
	{ 12, 65536 }, { 13, 1590000 }, { 14, 512 }, { 15, 1 },
	{ 16, 40 },						/* SMs */
	{ 17, 0 }, { 18, 0 }, { 19, 1 }, { 20, 0 },
	{ 21, 131072 }, { 22, 131072 }, { 23, 65536 },
	{ 24, 16384 }, { 25, 16384 }, { 26, 16384 },
	{ 27, 32768 }, { 28, 32768 }, { 29, 2048 },
	{ 30, 512 }, { 31, 1 }, { 32, 1 },
	/* 33, 34, 50: PCI location, per device */
	{ 35, 0 }, { 36, 5001000 }, { 37, 256 }, { 38, 4194304 }, { 39, 1024 },
	{ 40, 3 }, { 41, 1 }, { 42, 32768 }, { 43, 2048 }, { 44, 1 },
	{ 45, 32768 }, { 46, 32768 }, { 47, 8192 }, { 48, 8192 }, { 49, 32768 },
	{ 51, 32 }, { 52, 32768 }, { 53, 32768 }, { 54, 2046 },
	{ 55, 32768 }, { 56, 131072 }, { 57, 65536 },
	{ 58, 16384 }, { 59, 16384 }, { 60, 16384 },
	{ 61, 32768 }, { 62, 2048 }, { 63, 32768 }, { 64, 32768 }, { 65, 2048 },
	{ 66, 32768 }, { 67, 32768 }, { 68, 2046 },
	{ 69, 268435456 }, { 70, 131072 }, { 71, 65000 }, { 72, 2097120 },
	{ 73, 32768 }, { 74, 32768 },
	{ 75, FD_CC_MAJOR }, { 76, FD_CC_MINOR },		/* compute capability */
	{ 77, 32768 }, { 78, 1 }, { 79, 1 }, { 80, 1 },
	{ 81, 65536 }, { 82, 65536 }, { 83, 1 }, { 84, 0 },
	/* 85: board group, per device */
	{ 86, 0 }, { 87, 32 }, { 88, 0 }, { 89, 1 }, { 90, 1 }, { 91, 0 },
	{ 92, 0 }, { 93, 0 }, { 94, 0 }, { 95, 1 }, { 96, 1 }, { 97, 65536 },
	{ 98, 0 }, { 99, 1 }, { 100, 0 }, { 101, 0 }, { 102, 1 }, { 103, 1 },
	{ 104, 0 }, { 105, 0 }, { 106, 16 }, { 107, 0 }, { 108, 0 }, { 109, 0 },
	{ 110, 0 }, { 111, 0 }, { 112, 1 }, { 113, 1 }, { 114, 1 },
	{ 115, 1 },						/* memory pools: cudaMallocAsync */
	{ 116, 0 }, { 117, 0 }, { 118, 0 }, { 119, 1 }, { 120, 0 }, { 121, 1 },
	{ 122, 1 }, { 123, 1 }, { 124, 0 }, { 125, 1 }, { 126, 1 }, { 127, 0 },
	{ 128, 0 }, { 129, 0 }, { 130, 0 }, { 131, -1 }, { 132, 0 }, { 133, 0 },
	{ 134, -1 }, { 135, 0 }, { 136, 0 }, { 137, 0 }, { 138, 0 },
	{ 139, (0x1eb8 << 16) | 0x10de },			/* T4, NVIDIA */
	{ 140, (0x12a2 << 16) | 0x10de },
	{ 141, 0 }, { 142, 0 }, { 143, 0 }, { 144, 0 }, { 145, 0 }, { 146, 0 }, { 147, 0 },
};

static CUresult device_attr(int *value, int attr, CUdevice dev)
{
	int domain, bus, device;

	fd_device_pci(dev, &domain, &bus, &device);
	switch (attr) {
	case 33: *value = bus; return CUDA_SUCCESS;
	case 34: *value = device; return CUDA_SUCCESS;
	case 50: *value = domain; return CUDA_SUCCESS;
	case 85: *value = dev; return CUDA_SUCCESS;
	}
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		if (attrs[i].id == attr) {
			*value = attrs[i].value;
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_INVALID_VALUE;
}

FD_EXPORT CUresult cuDeviceGetCount(int *count)
{
	if (!count)
		return fd_ret("cuDeviceGetCount", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_initialised())
		return fd_ret("cuDeviceGetCount", CUDA_ERROR_NOT_INITIALIZED, NULL);
	*count = fd_device_count();
	return fd_ret("cuDeviceGetCount", CUDA_SUCCESS, "count=%d", *count);
}

FD_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!device)
		return fd_ret("cuDeviceGet", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_valid_device(ordinal))
		return fd_ret("cuDeviceGet", CUDA_ERROR_INVALID_DEVICE, "ordinal=%d", ordinal);
	*device = ordinal;
	return fd_ret("cuDeviceGet", CUDA_SUCCESS, "ordinal=%d", ordinal);
}

FD_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	if (!name || len <= 0)
		return fd_ret("cuDeviceGetName", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_valid_device(dev))
		return fd_ret("cuDeviceGetName", CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
	snprintf(name, (size_t)len, "Zernel Fake Tesla T4");
	return fd_ret("cuDeviceGetName", CUDA_SUCCESS, "dev=%d", dev);
}

FD_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	if (!bytes)
		return fd_ret("cuDeviceTotalMem_v2", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_valid_device(dev))
		return fd_ret("cuDeviceTotalMem_v2", CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
	*bytes = FD_TOTAL_MEM;
	return fd_ret("cuDeviceTotalMem_v2", CUDA_SUCCESS, "dev=%d", dev);
}

FD_EXPORT CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev)
{
	CUresult rc;

	if (!value)
		return fd_ret("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_valid_device(dev))
		return fd_ret("cuDeviceGetAttribute", CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
	rc = device_attr(value, attr, dev);
	return fd_ret("cuDeviceGetAttribute", rc, "attr=%d dev=%d value=%d", attr, dev,
		      rc == CUDA_SUCCESS ? *value : 0);
}

FD_EXPORT CUresult cuDeviceGetUuid(unsigned char *uuid, CUdevice dev)
{
	if (!uuid)
		return fd_ret("cuDeviceGetUuid", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_valid_device(dev))
		return fd_ret("cuDeviceGetUuid", CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
	fd_device_uuid(dev, uuid);
	return fd_ret("cuDeviceGetUuid", CUDA_SUCCESS, "dev=%d", dev);
}

FD_EXPORT CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
	int domain, bus, device;

	if (!id || len <= 0)
		return fd_ret("cuDeviceGetPCIBusId", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_valid_device(dev))
		return fd_ret("cuDeviceGetPCIBusId", CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
	fd_device_pci(dev, &domain, &bus, &device);
	snprintf(id, (size_t)len, "%08x:%02x:%02x.0", domain, bus, device);
	return fd_ret("cuDeviceGetPCIBusId", CUDA_SUCCESS, "dev=%d", dev);
}

FD_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
	unsigned int domain, bus, device;

	if (!dev || !id || sscanf(id, "%x:%x:%x", &domain, &bus, &device) != 3)
		return fd_ret("cuDeviceGetByPCIBusId", CUDA_ERROR_INVALID_VALUE, NULL);
	if (domain != 0 || device != 0 || !fd_valid_device((int)bus - FD_PCI_BUS0))
		return fd_ret("cuDeviceGetByPCIBusId", CUDA_ERROR_INVALID_DEVICE, "id=%s", id);
	*dev = (int)bus - FD_PCI_BUS0;
	return fd_ret("cuDeviceGetByPCIBusId", CUDA_SUCCESS, "id=%s dev=%d", id, *dev);
}

FD_EXPORT CUresult cuDeviceGetP2PAttribute(int *value, int attr, CUdevice src, CUdevice dst)
{
	if (!value || !fd_valid_device(src) || !fd_valid_device(dst) || src == dst)
		return fd_ret("cuDeviceGetP2PAttribute", CUDA_ERROR_INVALID_DEVICE, NULL);
	/* Boards on separate PCIe switches: no peer access. */
	*value = 0;
	return fd_ret("cuDeviceGetP2PAttribute", CUDA_SUCCESS, "attr=%d src=%d dst=%d", attr, src,
		      dst);
}

FD_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
	if (!can || !fd_valid_device(dev) || !fd_valid_device(peer))
		return fd_ret("cuDeviceCanAccessPeer", CUDA_ERROR_INVALID_DEVICE, NULL);
	*can = 0;
	return fd_ret("cuDeviceCanAccessPeer", CUDA_SUCCESS, "dev=%d peer=%d", dev, peer);
}

FD_EXPORT CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t *max, int format, unsigned int chans,
						      CUdevice dev)
{
	if (!max || !fd_valid_device(dev))
		return fd_ret("cuDeviceGetTexture1DLinearMaxWidth", CUDA_ERROR_INVALID_VALUE, NULL);
	*max = 268435456;
	return fd_ret("cuDeviceGetTexture1DLinearMaxWidth", CUDA_SUCCESS,
		      "format=%d chans=%u dev=%d", format, chans, dev);
}
