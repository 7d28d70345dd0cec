"""TFRecord checksums (masked CRC32C, ``google-crc32c``'s) of many records: `masked_crc32c`.

Example:
  >>> [hex(c) for c in masked_crc32c([b'123456789', b'', b'a'])]
  ['0xc78ab0e5', '0xa282ead8', '0x28e46e78']
  >>> rows = np.frombuffer(b'123456789' * 2, np.uint8).reshape(2, 9)
  >>> masked_crc32c(rows).tolist() == [masked_crc32c([b'123456789'])[0]] * 2
  True
"""

from typing import Sequence, Union

import google_crc32c
import numpy as np

__all__ = ['masked_crc32c']

_MASK_DELTA = 0xA282EAD8
Records = Union[np.ndarray, Sequence[bytes]]


def masked_crc32c(records: Records) -> np.ndarray:
  """``[N]`` uint32 masked CRC32C of ``records`` (``[N, L]`` uint8 rows, or ``bytes``), as TFRecord.

  Example:
    >>> masked_crc32c([b'abc', b'abcd']).tolist()
    [569464686, 3068530792]
  """
  crc = np.fromiter((google_crc32c.value(record) for record in records),
                    np.uint64, count=len(records))
  rotated = ((crc >> 15) | (crc << 17)) & 0xFFFFFFFF
  return ((rotated + _MASK_DELTA) & 0xFFFFFFFF).astype(np.uint32)
