"""Unit quaternions p = (w, x, y, z) (Hamilton's convention) for the orientation of spatial
bodies: the product, the conjugate, the rotation matrix A(p / |p|) (body frame -> global) and
the exponential of a rotation vector (Nikravesh, Computer-Aided Analysis of Mechanical
Systems, ch. 6; the spatial note, section 2). Quaternions lie along the last axis."""

import jax.numpy as jnp


def product(a, b):
    """a (x) b = (a_w b_w - a_v . b_v, a_w b_v + b_w a_v + a_v x b_v)."""
    aw, av = a[..., :1], a[..., 1:]
    bw, bv = b[..., :1], b[..., 1:]
    w = aw * bw - jnp.sum(av * bv, axis=-1, keepdims=True)
    return jnp.concatenate([w, aw * bv + bw * av + jnp.cross(av, bv)], axis=-1)


def conjugate(p):
    """(w, -x, -y, -z): the inverse rotation of a unit quaternion."""
    return jnp.concatenate([p[..., :1], -p[..., 1:]], axis=-1)


def pure(v):
    """The pure quaternion (0, v) of a 3-vector."""
    return jnp.concatenate([jnp.zeros(v.shape[:-1] + (1,), v.dtype), v], axis=-1)


def matrix(p):
    """A(p / |p|), the rotation matrix of any non-zero quaternion (the scale divides out:
    A = I + 2 (w [v]x + [v]x^2) / |p|^2)."""
    w, x, y, z = (p[..., k] for k in range(4))
    s = 2.0 / jnp.sum(p * p, axis=-1)
    rows = [
        [1.0 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)],
        [s * (x * y + w * z), 1.0 - s * (x * x + z * z), s * (y * z - w * x)],
        [s * (x * z - w * y), s * (y * z + w * x), 1.0 - s * (x * x + y * y)],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def exp(theta):
    """The unit quaternion of the rotation vector theta: (cos(|theta| / 2),
    sin(|theta| / 2) theta / |theta|), smooth at theta = 0 (a Taylor series below 1e-4 rad,
    where its error is below 1e-20, so derivatives at zero are exact)."""
    sq = jnp.sum(theta * theta, axis=-1, keepdims=True)
    small = sq < 1e-8
    safe = jnp.where(small, 1.0, sq)
    angle = jnp.sqrt(safe)
    cos = jnp.where(small, 1.0 - sq / 8.0, jnp.cos(angle / 2.0))
    sinc = jnp.where(small, 0.5 - sq / 48.0, jnp.sin(angle / 2.0) / angle)
    return jnp.concatenate([cos, sinc * theta], axis=-1)


def log(p):
    """The rotation vector theta of a unit quaternion (the inverse of `exp`), the shorter way
    round (p and -p are one rotation): theta = 2 atan2(|v|, |w|) sign(w) v / |v|, smooth at
    theta = 0 (the series 2 v / w (1 - |v|^2 / (3 w^2)) below |v| = 1e-4 |w|)."""
    w, v = p[..., :1], p[..., 1:]
    sign = jnp.where(w < 0.0, -1.0, 1.0)
    w, v = sign * w, sign * v
    sq = jnp.sum(v * v, axis=-1, keepdims=True)
    small = sq < 1e-8 * w * w
    size = jnp.sqrt(jnp.where(small, 1.0, sq))
    safe_w = jnp.where(small, w, 1.0)
    factor = jnp.where(
        small,
        2.0 / safe_w * (1.0 - sq / (3.0 * safe_w * safe_w)),
        2.0 * jnp.arctan2(size, w) / size,
    )
    return factor * v


def normalized(p):
    """p / |p|."""
    return p / jnp.linalg.norm(p, axis=-1, keepdims=True)


def from_matrix(A):
    """The unit quaternion (w >= 0 where possible) of a rotation matrix, by Shepperd's method:
    of the four expressions for 4 w^2, 4 x^2, 4 y^2, 4 z^2 from the trace and the diagonal the
    largest is taken as the pivot (Shepperd, J. Guidance Control 1 (1978) 223), so no division
    by a small number occurs; traceable (the pivot chosen by `jnp.where`)."""
    a = A
    t = a[..., 0, 0] + a[..., 1, 1] + a[..., 2, 2]
    d = jnp.stack([t, a[..., 0, 0], a[..., 1, 1], a[..., 2, 2]], axis=-1)
    four = jnp.stack(
        [1.0 + t, 1.0 + 2 * d[..., 1] - t, 1.0 + 2 * d[..., 2] - t, 1.0 + 2 * d[..., 3] - t],
        axis=-1,
    )
    k = jnp.argmax(four, axis=-1)
    s = jnp.sqrt(jnp.max(four, axis=-1))  # 2 |component k|
    wx = a[..., 2, 1] - a[..., 1, 2]
    wy = a[..., 0, 2] - a[..., 2, 0]
    wz = a[..., 1, 0] - a[..., 0, 1]
    xy = a[..., 0, 1] + a[..., 1, 0]
    xz = a[..., 0, 2] + a[..., 2, 0]
    yz = a[..., 1, 2] + a[..., 2, 1]
    candidates = jnp.stack(
        [
            jnp.stack([s * s, wx, wy, wz], axis=-1),
            jnp.stack([wx, s * s, xy, xz], axis=-1),
            jnp.stack([wy, xy, s * s, yz], axis=-1),
            jnp.stack([wz, xz, yz, s * s], axis=-1),
        ],
        axis=-2,
    )
    chosen = jnp.take_along_axis(candidates, k[..., None, None], axis=-2)[..., 0, :]
    p = chosen / (2.0 * s[..., None])
    return p * jnp.where(p[..., :1] < 0.0, -1.0, 1.0)
