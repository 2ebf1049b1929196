/* Rodinia nn_cuda.cu euclid kernel (the paper's Table 4 example), re-typed for the PTX tests. */
typedef struct { float lat, lng; } LatLong;

__global__ void euclid(LatLong *d_locations, float *d_distances, int numRecords, float lat, float lng)
{
  int globalId = blockDim.x * (gridDim.x * blockIdx.y + blockIdx.x) + threadIdx.x;
  if (globalId < numRecords) {
    LatLong *latLong = d_locations + globalId;
    float *dist = d_distances + globalId;
    *dist = (float)sqrt((lat - latLong->lat) * (lat - latLong->lat) + (lng - latLong->lng) * (lng - latLong->lng));
  }
}
