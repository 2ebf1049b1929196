"""Ownership of a C handle: freed once, by close(), a with block's end or garbage collection."""
import ctypes
import weakref


class Handle:
    _free = None  # the C call that frees the handle, set by each subclass

    def __init__(self, ptr=None, owner=None):
        self._ptr = ptr
        self._owner = owner  # an object that must outlive this one (a borrowed handle's source)
        self._dependents = []  # weak references to handles that use this one: closed before it

    def depend(self, other):
        """other uses this handle until it is closed: closing this one closes other first (at
        interpreter exit objects are collected in any order)."""
        self._dependents.append(weakref.ref(other))

    @property
    def ptr(self):
        if not self._ptr:
            raise ValueError("%s is closed" % type(self).__name__)
        return self._ptr

    def close(self):
        """Frees the C object; further use raises ValueError. Calling it again does nothing."""
        for ref in getattr(self, "_dependents", []):
            dep = ref()
            if dep is not None:
                dep.close()
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr and self._owner is None and type(self)._free is not None:
            type(self)._free(ptr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # at interpreter exit the library's functions may already be gone: nothing to free then
        try:
            self.close()
        except Exception:
            pass


def create(call, *args):
    """The handle a creating call (its last argument a void **) makes; Error when it fails."""
    from ._lib import check
    p = ctypes.c_void_p()
    check(call(*args, ctypes.byref(p)))
    return p.value
