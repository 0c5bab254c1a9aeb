"""Scene data: a numpy mesh rasterizer and real-mesh scene generators."""
