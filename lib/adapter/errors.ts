import { ApiError, type ErrorDetails, errors } from '../errors.ts';

/** Error helpers with the contract's codes (adapter.NotFound, adapter.Unsupported, ...). */
export const adapterErrors = {
  notFound: (ref: string) => new ApiError('not_found', `instance ${ref} not found`, { ref }),
  /** A path the sandbox does not have (a file call, not the instance). */
  fileNotFound: (path: string) =>
    new ApiError('not_found', `no file or directory at ${path} in the sandbox`, { path }),
  unsupported: (operation: string, details?: ErrorDetails) => errors.unsupportedOperation(operation, details),
  unavailable: (message: string, details?: ErrorDetails, options?: ErrorOptions) =>
    errors.providerUnavailable(message, details, options),
  insufficientCapacity: (message: string, details?: ErrorDetails) =>
    errors.insufficientCapacity(message, details),
  sandboxFailed: (message: string, details?: ErrorDetails) => errors.sandboxFailed(message, details),
  invalidRequest: (message: string, details?: ErrorDetails) => errors.invalidRequest(message, details),
  invalidState: (message: string, details?: ErrorDetails) => errors.invalidState(message, details),
};

/**
 * A file-system error in plain words, for adapters that reach the sandbox's files through a file system
 * (errno codes never reach a client): missing, a directory where a file was expected, or a file in the
 * middle of a path.
 */
export function fileSystemError(error: unknown, path: string): Error {
  const code = (error as { code?: unknown }).code;
  if (code === 'ENOENT') return adapterErrors.fileNotFound(path);
  if (code === 'EISDIR')
    return adapterErrors.invalidRequest(`${path} is a directory: read a file, or list the directory`, {
      path,
    });
  // EEXIST: mkdir met a file where a folder of the path should be.
  if (code === 'ENOTDIR' || code === 'EEXIST')
    return adapterErrors.invalidRequest(`a part of ${path} is a file, not a directory`, { path });
  if (code === 'ENAMETOOLONG')
    return adapterErrors.invalidRequest(`${path} has a name longer than the sandbox's file system allows`, {
      path,
    });
  // A FIFO or device nobody serves (opened without blocking).
  if (code === 'ENXIO' || code === 'ENODEV')
    return adapterErrors.invalidRequest(`${path} is not a regular file`, { path });
  if (code === 'ELOOP')
    return adapterErrors.invalidRequest(`${path} passes through too many symbolic links`, { path });
  if (code === 'EACCES' || code === 'EPERM')
    return adapterErrors.invalidRequest(`${path} cannot be accessed in the sandbox`, { path });
  return error instanceof Error ? error : new Error(String(error));
}
